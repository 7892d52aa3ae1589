#pragma once
// The lower bound of what a Wan request holds per stage (pipeline/common/memory_check.h), from the
// configs alone: checked before any weight is read.
#include <vector>

#include "dattn/pipeline/wan/wan_pipeline.h"
#include "pipeline/common/memory_check.h"

namespace dattn {

// Denoising: the transformer's weights (unless resident already), the latents with the solver's state,
// and one forward's activations (hidden states, q, k, v, the feed-forward's hidden layer); VAE decode:
// its weights, the decoded video and one feature map at the decoder's output resolution; on CUDA, the
// host also holds the video and the frames made from it. Sizes are overflow-checked (UserError).
std::vector<pipeline::StageNeed> wan_request_memory(const WanPipelineInfo& info, const GenerationRequest& request,
                                                    const PipelineOptions& options);

}  // namespace dattn
