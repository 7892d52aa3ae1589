#pragma once
// The attention layer's one-time CUDA set-up, made ahead of the first real call. A process's first
// TORCH_SDPA call on CUDA (the text encoders' attention) paid about 0.1 s of cuBLASLt first use,
// measured with bench/text_stage_bench.cc on the H200: a pipeline runs this on a thread beside its
// loads (pipeline/common/library_warmup.h) so that the first text encode does not.
namespace dattn {

// Runs one tiny TORCH_SDPA problem (bf16, the GEMM kernel) on the current CUDA context's stream and
// waits for it. Throws UserError in a build without CUDA.
void prepare_attention_cuda();

}  // namespace dattn
