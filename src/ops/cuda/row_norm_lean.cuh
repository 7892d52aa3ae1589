#pragma once
// The long-row norms with the per-row work cut down (issue 23): one block per row of 16-bit elements, every
// thread holding exactly V vectors of 8 (rows whose 8-wide vectors split evenly: D a multiple of 256 V), with
//  - the element type a template argument (no dtype branches per vector) and 32-bit offsets within a row;
//  - the layer norms' mean and variance in one block reduction instead of two: each thread's mean and sum
//    of squared deviations over its own values (two passes over registers), merged pairwise across the warp
//    (equal counts: Chan et al.'s update without a division) and then across the warps through shared
//    memory (mean of the means, the squared deviations plus each warp's count times its mean's squared
//    distance from the row's). Stable on rows with a large mean like the two-pass form;
//  - the affine part folded per column into one multiply-add per element.
// The same results as row_norm_block_kernel up to float32 rounding (tests hold both to the float64 bounds).
// Layer and RMS norms (optionally the rotary embedding), the modulated layer norm, each optionally after a
// residual sum (Res: h + x * gate, rounded to the dtype, written out, then normalised as the two ops do).
#include <cstdint>

#include "ops/cuda/row_norm_args.cuh"

namespace dattn::ops::cuda {

// Makes the compiler treat v's registers as changed here, so that values unpacked from them before are not
// kept live past this point (it would otherwise hold the unpacked floats, twice the registers, rather than
// unpack again: a few instructions).
__device__ __forceinline__ void forget_unpacked(uint4& v) {
  asm volatile("" : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w));
}

struct MeanM2 {
  float mean, m2;  // the mean of n values and the sum of their squared deviations from it
};

// Two halves of equal count n_half merged; symmetric in a and b (xor-shuffle partners agree bit for bit).
__device__ __forceinline__ MeanM2 merge_equal_halves(MeanM2 a, MeanM2 b, float n_half) {
  const float d = b.mean - a.mean;
  return {(a.mean + b.mean) * 0.5f, (a.m2 + b.m2) + d * d * (n_half * 0.5f)};
}

// The row's mean and the inverse of its standard deviation from each thread's V x 8 values (all threads).
template <Elt E, int V>
__device__ __forceinline__ void lean_mean_inv(const uint4 (&x)[V], float s, float inv_d, float eps, float2* part,
                                              float& mean, float& inv) {
  constexpr int kPer = 8 * V;
  MeanM2 a{s * (1.0f / kPer), 0.0f};
#pragma unroll
  for (int j = 0; j < V; ++j) {
    uint4 xj = x[j];
    forget_unpacked(xj);
    float f[8];
    unpack8(xj, E, f);
#pragma unroll
    for (int e = 0; e < 8; ++e) a.m2 += (f[e] - a.mean) * (f[e] - a.mean);
  }
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const MeanM2 b{__shfl_xor_sync(0xffffffffu, a.mean, o), __shfl_xor_sync(0xffffffffu, a.m2, o)};
    a = merge_equal_halves(a, b, static_cast<float>(kPer * o));
  }
  const int warps = blockDim.x / 32;
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = make_float2(a.mean, a.m2);
  __syncthreads();
  float means = 0;
  for (int w = 0; w < warps; ++w) means += part[w].x;
  mean = means / static_cast<float>(warps);
  float m2 = 0, spread = 0;
  for (int w = 0; w < warps; ++w) {
    const float2 pw = part[w];
    m2 += pw.y;
    spread += (pw.x - mean) * (pw.x - mean);
  }
  m2 += spread * static_cast<float>(32 * kPer);
  inv = 1.0f / sqrtf(m2 * inv_d + eps);  // IEEE sqrt and division, as the other kernels
}

// MinBlocks: blocks of up to 512 threads an SM must hold (3 caps the registers at 40: 8 blocks of 192 threads,
// Wan's width, fit an SM).
template <NormKind K, Elt E, int V, bool Res, int MinBlocks>
__global__ void __launch_bounds__(512, MinBlocks) row_norm_lean_kernel(RowNormArgs p) {
  static_assert(E == Elt::BF16 || E == Elt::F16, "the lean kernel holds 16-bit rows");
  static_assert(K != NormKind::Residual, "gated_residual keeps the block kernels");
  __shared__ float2 part[32];
  using u32 = std::uint32_t;
  using u16 = std::uint16_t;
  const u32 r = blockIdx.x, lanes = blockDim.x;
  const i64 base = i64{r} * p.d;
  const ParamRows q = global_param_rows(p, r);
  uint4 x[V];  // the row's elements packed: half the registers of floats
  float s = 0;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const u32 c = (threadIdx.x + j * lanes) * 8;
    float f[8];
    if constexpr (Res) {
      residual_sum8(p, E, E, q, base + c, c, f);
      x[j] = pack8(E, f);
      *reinterpret_cast<uint4*>(static_cast<u16*>(p.res_out) + base + c) = x[j];
      unpack8(x[j], E, f);  // the rounded sum is what the norm sees
    } else {
      x[j] = __ldcs(reinterpret_cast<const uint4*>(static_cast<const u16*>(p.x) + base + c));  // see load8
      unpack8(x[j], E, f);
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) s += K == NormKind::Rms ? f[e] * f[e] : f[e];
  }
  const float inv_d = 1.0f / static_cast<float>(p.d);
  float mean = 0, inv;
  if constexpr (K == NormKind::Rms) {
    inv = 1.0f / sqrtf(block_sum(s, &part[0].x) * inv_d + p.eps);
  } else {
    lean_mean_inv<E, V>(x, s, inv_d, p.eps, part, mean, inv);
  }
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const u32 c = (threadIdx.x + j * lanes) * 8;
    Params8 m;
    load_params8<K>(p, q, c, m);
    forget_unpacked(x[j]);
    float f[8], y[8];
    unpack8(x[j], E, f);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      if constexpr (K == NormKind::LayerModulated) {
        y[e] = (f[e] - mean) * fmaf(inv, m.b[e], inv) + m.a[e];  // inv (1 + scale) per column
      } else {
        const float a = p.w ? inv * m.a[e] : inv;
        y[e] = (K == NormKind::Rms ? f[e] : f[e] - mean) * a;
        if (K == NormKind::Layer && p.b) y[e] += m.b[e];
      }
    }
    if (K == NormKind::Rms && p.rope_cos) rope8(p, r, c, y);
    *reinterpret_cast<uint4*>(static_cast<u16*>(p.y) + base + c) = pack8(E, y);
  }
}

// Vectors of 8 a thread in the lean kernel.
constexpr int kLeanVectors = 2;

// Whether the lean kernel takes these rows: 16-bit elements with 8-wide access, D a multiple of 256 V from
// 512 V (shorter rows take the group kernel) up to 4096 V (512 threads), weight and bias 8-wide, a residual
// in x's dtype, output rows not windowed.
template <NormKind K>
bool lean_kernel_takes(const RowNormArgs& p) {
  constexpr i64 kPerWarp = 32 * 8 * kLeanVectors;
  if (K == NormKind::Residual || !p.vec || (p.ex != Elt::BF16 && p.ex != Elt::F16)) return false;
  if (p.d % kPerWarp != 0 || p.d < 2 * kPerWarp || p.d > 16 * kPerWarp || p.in_item_rows != 0) return false;
  if (p.w && !p.w_vec) return false;
  if (p.res_x && (K == NormKind::Rms || p.eres != p.ex)) return false;
  return true;
}

template <NormKind K, Elt E, int MinBlocks>
void launch_lean_dtype(const RowNormArgs& p, cudaStream_t stream) {
  if constexpr (K == NormKind::Layer || K == NormKind::LayerModulated || K == NormKind::Rms) {
    const auto threads = static_cast<unsigned>(p.d / (8 * kLeanVectors));
    const auto blocks = static_cast<unsigned>(p.rows);
    if constexpr (K != NormKind::Rms) {
      if (p.res_x) {
        row_norm_lean_kernel<K, E, kLeanVectors, true, MinBlocks><<<blocks, threads, 0, stream>>>(p);
        return;
      }
    }
    row_norm_lean_kernel<K, E, kLeanVectors, false, MinBlocks><<<blocks, threads, 0, stream>>>(p);
  }
}

// Launches the lean kernel (callers check lean_kernel_takes first), its registers capped at 40 or not.
template <NormKind K>
void launch_row_norm_lean(const RowNormArgs& p, bool cap_registers, cudaStream_t stream) {
  if (p.ex == Elt::BF16)
    cap_registers ? launch_lean_dtype<K, Elt::BF16, 3>(p, stream) : launch_lean_dtype<K, Elt::BF16, 1>(p, stream);
  else
    cap_registers ? launch_lean_dtype<K, Elt::F16, 3>(p, stream) : launch_lean_dtype<K, Elt::F16, 1>(p, stream);
}

}  // namespace dattn::ops::cuda
