#pragma once
// The Wan VAE decoder on CUDA, as WanVae sees it (plain C++; in a build without CUDA, no_cuda.cc makes
// every entry point a clear error). The layers are in cuda/layers.h, the kernels in cuda/*.cu.
#include <cstdint>
#include <memory>
#include <string>

#include "dattn/core/tensor.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/wan_vae.h"

namespace dattn::wan_vae {

class CudaDecoder;

// Takes decoder.* and post_quant_conv.* from `store` and uploads them (float32). Throws UserError when
// this build has no CUDA or no device is visible.
std::shared_ptr<const CudaDecoder> load_cuda_decoder(WeightStore& store, const WanVaeConfig& config,
                                                     WanVaeConvMath math);

// z [B, z_dim, T, H, W] (float32, any device) -> video [B, C, T', H', W'] float32 on CUDA, clamped to
// [-1, 1]. Waits for the GPU and reports a failed kernel before returning.
Tensor cuda_decode(const CudaDecoder& decoder, const WanVaeConfig& config, const Tensor& z);

// For tests: while on, every activation, cache frame and the video the CUDA decoder allocates is
// filled with NaN first, so that any element a kernel fails to write shows in the output.
void set_cuda_poison(bool on);

// For tests: the most bytes the mid-block attention's score block may take (queries are processed in
// blocks of rows that fit); 0 restores the default (gpu::AttentionBlock::kScoreBytes).
void set_cuda_attention_score_bytes(std::int64_t bytes);

}  // namespace dattn::wan_vae
