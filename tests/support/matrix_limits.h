#pragma once
// Acceptance limits of the backend matrix, on the CPU (tests/attention/test_backend_matrix.cc) and on
// CUDA (test_backend_matrix_cuda.cc), and why each is what it is. Header only; no GoogleTest.
#include <string_view>

#include "dattn/attention/backend.h"
#include "dattn/core/device.h"
#include "dattn/core/dtype.h"
#include "support/attention_cases.h"

namespace dattn::test {

inline bool is(const AttentionBackend& be, std::string_view name) { return be.name() == name; }

// Exact backends (FLASH_ATTN, TORCH_SDPA, SPARSE_BLOCK at density 1 or against its kept-block
// reference) compute in fp32 from inputs that are exact in their dtype, so the error is fp32
// rounding accumulated over <= 200 keys (~sqrt(Sk) * 6e-8 ~ 1e-6, limit 1e-5) plus one rounding of
// the output: bf16 has 8 significant bits (unit roundoff 2^-9, ~1.1e-3 rms over uniform rounding
// errors; limit 6e-3 ~ 2^-8 with margin), fp16 11 bits (2^-12 ~ 2.4e-4; limit 1e-3).
// On CUDA a fp32 kernel sums in another order than the CPU (warp-wide dot products, per-lane
// accumulators), but its rounding is of the same size (~1e-6 at these lengths; TORCH_SDPA blocks its
// key sums so that even Sk = 20000 stays near 1e-6), so fp32 keeps 1e-5 there too.
inline Limits exact_limits(DType t) {
  switch (t) {
    case DType::BF16: return {6e-3, 0.9999};
    case DType::F16: return {1e-3, 0.99999};
    default: return {1e-5, 0.9999999};
  }
}

// SAGE_ATTN (CPU and CUDA): INT8 Q/K (127 levels per block) and FP8 e4m3 P and V (3 mantissa bits:
// relative rounding up to 2^-4, ~3.6e-2 rms). The per-key errors are independent and average out in
// P.V, but on Gaussian inputs the output is itself an average of uncorrelated V rows and shrinks at the
// same rate, so the relative error stays near e4m3's rms rounding: 3.5-3.9e-2 observed (docs: 1-3e-2).
// 0.05 leaves margin; cosine 0.999 (SageAttention's usual bar) is rel_l2 ~0.045 for unbiased errors.
// rel L1 <= 0.045 on these zero-mean iid inputs and <= 0.03 on the real (golden) attention inputs are
// issue 23's restated bars (the golden cases measure ~2.3e-2).
inline constexpr Limits kSageLimits{0.05, 0.999, 0.045};
inline constexpr Limits kSageGoldenLimits{0.05, 0.999, 0.03};

// The limits of `be`'s run on `device` against the float64 reference: SAGE_ATTN's, else the exact
// ones, except FLASH_ATTN bf16 on CUDA: the issue asks for rel L2 3e-3 there (output rounding alone is
// ~1.1e-3 rms; fp16 keeps 1e-3), tighter than the CPU's 6e-3.
inline Limits limits_for(const AttentionBackend& be, DType t, Device device) {
  if (is(be, "SAGE_ATTN")) return kSageLimits;
  if (device == Device::CUDA && is(be, "FLASH_ATTN") && t == DType::BF16) return {3e-3, 0.9999};
  return exact_limits(t);
}

// Against diffusers' output (the golden cases, on either device), the rounding of the golden float64
// inputs to the dtype adds to the backend's own error (our float64 reference sees the rounded inputs,
// diffusers did not): q, k and v each move by up to 2^-9 (bf16) or 2^-12 (fp16) relative. Observed for
// exact backends: bf16 ~2.7e-3, fp16 ~3.3e-4, fp32 ~5e-7 (diffusers' own fp32 rounding for hv15);
// limits are ~3x that. SAGE_ATTN's own error (~2-4e-2) dwarfs the input rounding: its golden bars.
inline Limits golden_limits(const AttentionBackend& be, DType t) {
  if (is(be, "SAGE_ATTN")) return kSageGoldenLimits;
  switch (t) {
    case DType::BF16: return {1e-2, 0.9999};
    case DType::F16: return {1.5e-3, 0.99999};
    default: return {1e-5, 0.9999999};
  }
}

}  // namespace dattn::test
