#pragma once
// The lower bound of what a HunyuanVideo-1.5 request holds per stage (pipeline/common/memory_check.h),
// from the configs alone: checked before any weight is read.
#include <vector>

#include "dattn/pipeline/hunyuanvideo15/hv15_pipeline.h"
#include "pipeline/common/memory_check.h"

namespace dattn {

// Denoising: the transformer's weights (unless resident), the latents with the solver's state and one
// forward's activations (video tokens: hidden states, q, k, v, the feed-forward's hidden layer); VAE
// decode: the decoder's own model of its streamed decode (weights, video, caches, working set); on CUDA
// the host also holds the video and its frames. The text encoders are not counted (a lower bound).
std::vector<pipeline::StageNeed> hv15_request_memory(const Hv15PipelineInfo& info, const GenerationRequest& request,
                                                     const PipelineOptions& options);

}  // namespace dattn
