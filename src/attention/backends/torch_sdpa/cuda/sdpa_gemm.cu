// TORCH_SDPA's GEMM kernel (sdpa_gemm.h): the row kernel's function at tensor-core speed for the
// products. Per batch item b and chunk of heads x query rows, on one stream:
//   1. v32 = v in fp32, with non-finite values replaced by 0 and flagged per key (bad_v), so a key
//      the softmax hides contributes exactly 0 to P · v (never 0 * NaN);
//   2. S = scale * q kᵀ (cuBLASLt, fp32 result);
//   3. one block per row: mask added, row max, e = exp(s - max), P = e / sum(e), all fp32, in place.
//      Hidden keys (padding, boolean 0, causal, additive -inf) get exactly 0. A row with a NaN or +Inf
//      score, or a non-finite v under a key it sees, is left to the row kernel (marked, not computed
//      here), which gives such rows torch's NaN semantics exactly. A row with no visible key is 0;
//   4. O = P · v32 (cuBLASLt, fp32), rounded once to the output dtype (fp32 output: written directly).
// The scores of a chunk stay within kScoreBytes of scratch: all heads of b when they fit, else fewer
// heads, else (one head) fewer query rows.
#include "attention/backends/torch_sdpa/cuda/sdpa_gemm.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "attention/backends/torch_sdpa/cuda/f32_values.cuh"
#include "attention/backends/torch_sdpa/cuda/strided_gemm.h"
#include "core/cuda/check.cuh"
#include "core/cuda/cublaslt_check.cuh"
#include "dattn/core/error.h"

namespace dattn::sdpa {
namespace {

constexpr std::int64_t kScoreBytes = std::int64_t{256} << 20;
constexpr int kSoftmaxThreads = 256;
constexpr int kCopyThreads = 256;


// v of batch item b ([Sk, Hkv, D]) to fp32; bad_v[hkv * Sk + j] = 1 where key j's vector is not finite.
template <typename T>
__global__ void values_to_f32(const T* v, float* v32, std::uint8_t* bad_v, std::int64_t n, std::int64_t Sk,
                              std::int64_t Hkv, std::int64_t D) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < n; e += std::int64_t(gridDim.x) * blockDim.x) {
    const float x = to_f32(v[e]);
    const bool finite = isfinite(x);
    v32[e] = finite ? x : 0.0f;
    if (!finite) bad_v[(e / D) % Hkv * Sk + e / (D * Hkv)] = 1;
  }
}

template <typename T>
__global__ void out_from_f32(const float* o32, T* out, std::int64_t n) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < n; e += std::int64_t(gridDim.x) * blockDim.x)
    out[e] = from_f32<T>(o32[e]);
}

struct SoftmaxParams {
  float* scores;               // [heads, rows, Sk] of this chunk: S in, P out
  std::int64_t Sk, Sq, Hq, group, rows, i0, h0, b;
  const std::int64_t* key_lengths;  // device [B] or null
  const std::uint8_t* key_mask;     // device [B, Sk] or null
  const void* mask;                 // device [B, mask_heads, Sq, Sk] or null
  bool additive;
  std::int64_t mask_heads;
  bool causal;
  const std::uint8_t* bad_v;        // [Hkv, Sk] of b
  std::uint8_t* row_kernel_rows;    // [B, Hq, Sq]
};

template <typename Op>
__device__ float block_reduce(float x, Op op, float* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = op(x, __shfl_xor_sync(0xffffffffu, x, o));
  __syncthreads();  // `shared` may still be read from the previous reduction
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  x = shared[0];
  for (int w = 1; w < kSoftmaxThreads / 32; ++w) x = op(x, shared[w]);
  return x;
}

__global__ void __launch_bounds__(kSoftmaxThreads) masked_softmax_rows(const SoftmaxParams p) {
  __shared__ float shared[kSoftmaxThreads / 32];
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const std::int64_t r = blockIdx.x, h = p.h0 + r / p.rows, i = p.i0 + r % p.rows;
  float* srow = p.scores + r * p.Sk;
  const std::int64_t len = p.key_lengths ? p.key_lengths[p.b] : p.Sk;
  const std::int64_t n_keys = p.causal && i + 1 < len ? i + 1 : len;
  const std::uint8_t* kmask = p.key_mask ? p.key_mask + p.b * p.Sk : nullptr;
  const std::int64_t mask_row = p.mask ? ((p.b * p.mask_heads + (p.mask_heads == 1 ? 0 : h)) * p.Sq + i) * p.Sk : 0;
  const auto* bool_mask = p.mask && !p.additive ? static_cast<const std::uint8_t*>(p.mask) + mask_row : nullptr;
  const auto* add_mask = p.mask && p.additive ? static_cast<const float*>(p.mask) + mask_row : nullptr;
  const std::uint8_t* bad_v = p.bad_v + (h / p.group) * p.Sk;
  // The masked score of key j, -inf when the key is hidden (the same bits in every pass).
  auto score = [&](std::int64_t j) {
    if (j >= n_keys || (kmask && kmask[j] == 0) || (bool_mask && bool_mask[j] == 0)) return kNegInf;
    return add_mask ? srow[j] + add_mask[j] : srow[j];
  };

  float row_max = kNegInf, exact_here = 1.0f;  // exact_here 0: the row kernel must compute the row
  for (std::int64_t j = threadIdx.x; j < p.Sk; j += kSoftmaxThreads) {
    const float s = score(j);
    if (s == kNegInf) continue;
    if (s != s || s == -kNegInf || bad_v[j]) exact_here = 0.0f;
    row_max = fmaxf(row_max, s);
  }
  row_max = block_reduce(row_max, [](float a, float b) { return fmaxf(a, b); }, shared);
  exact_here = block_reduce(exact_here, [](float a, float b) { return fminf(a, b); }, shared);
  if (exact_here == 0.0f) {
    if (threadIdx.x == 0) p.row_kernel_rows[(p.b * p.Hq + h) * p.Sq + i] = 1;
    return;  // this row of P is never used: its output row is overwritten
  }
  if (row_max == kNegInf) {  // no visible key: P = 0, so the output row is exactly 0
    for (std::int64_t j = threadIdx.x; j < p.Sk; j += kSoftmaxThreads) srow[j] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < p.Sk; j += kSoftmaxThreads) {
    const float s = score(j);
    const float e = s == kNegInf ? 0.0f : expf(s - row_max);
    srow[j] = e;
    sum += e;
  }
  sum = block_reduce(sum, [](float a, float b) { return a + b; }, shared);  // >= 1: the max key gives exp(0)
  for (std::int64_t j = threadIdx.x; j < p.Sk; j += kSoftmaxThreads) srow[j] /= sum;
}

unsigned copy_blocks(std::int64_t n) {
  return static_cast<unsigned>(std::min<std::int64_t>((n + kCopyThreads - 1) / kCopyThreads, 8192));
}

std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }
int min_alignment(int a, int b) { return a < b ? a : b; }
int bytes_alignment(std::int64_t bytes) {
  return dattn::cuda::pointer_alignment(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(bytes)));
}

// How a problem is cut: `heads` heads x `rows` query rows of one batch item per chunk.
struct Chunking {
  std::int64_t heads = 0, rows = 0;
};

// Zero when one row of scores does not fit the scratch budget.
Chunking chunking(const AttentionShape& sh) {
  const std::int64_t row_bytes = sh.seq_k * std::int64_t(sizeof(float));
  if (row_bytes > kScoreBytes) return {};
  const std::int64_t group = sh.heads_q / sh.heads_kv;
  if (sh.seq_q * row_bytes <= kScoreBytes)
    return {group > 1 ? 1 : std::min(sh.heads_q, kScoreBytes / (sh.seq_q * row_bytes)), sh.seq_q};
  return {1, kScoreBytes / row_bytes};
}

// The two GEMMs of a chunk of `heads` x `rows`, with null pointers (filled by the caller) and the
// alignments every chunk of the problem keeps.
struct ChunkGemms {
  StridedGemm scores, values;
};

ChunkGemms chunk_gemms(const AttentionProblem& pr, std::int64_t heads, std::int64_t rows) {
  const AttentionShape& sh = pr.shape;
  const std::int64_t D = sh.head_dim, es = std::int64_t(dtype_size(sh.dtype));
  const std::int64_t q_ld = sh.heads_q * D, kv_ld = sh.heads_kv * D, Sk = sh.seq_k;
  // Every offset of q, k, v and out is a multiple of D elements; scores and v32 are scratch (256-byte
  // aligned) at multiples of Sk and D floats.
  auto operand_alignment = [&](const void* base, std::int64_t elem) {
    return min_alignment(dattn::cuda::pointer_alignment(base), bytes_alignment(D * elem));
  };
  ChunkGemms g;
  // Column-major S[Sk, rows] per head = (k as [D, Sk])ᵀ · (q as [D, rows]).
  StridedGemm& s = g.scores;
  s.m = Sk, s.n = rows, s.k = D, s.batch = heads, s.dtype = sh.dtype, s.trans_a = true;
  s.lda = kv_ld, s.stride_a = D, s.ldb = q_ld, s.stride_b = D, s.ldc = Sk, s.stride_c = rows * Sk;
  s.alpha = pr.softmax_scale();
  s.align_a = operand_alignment(pr.k, es), s.align_b = operand_alignment(pr.q, es);
  s.align_c = bytes_alignment(Sk * 4);
  // Column-major O[D, rows] per head = (v32 as [D, Sk]) · (P as [Sk, rows]).
  StridedGemm& v = g.values;
  v.m = D, v.n = rows, v.k = Sk, v.batch = heads, v.dtype = DType::F32;
  v.lda = kv_ld, v.stride_a = D, v.ldb = Sk, v.stride_b = rows * Sk, v.ldc = q_ld, v.stride_c = D;
  v.align_a = bytes_alignment(D * 4), v.align_b = bytes_alignment(Sk * 4);
  v.align_c = sh.dtype == DType::F32 ? operand_alignment(pr.out, 4) : bytes_alignment(D * 4);
  return g;
}

// The chunk shapes a problem runs: full chunks and the last (shorter) one in each direction.
std::set<std::pair<std::int64_t, std::int64_t>> chunk_shapes(const AttentionShape& sh, const Chunking& c) {
  std::set<std::pair<std::int64_t, std::int64_t>> shapes;
  for (std::int64_t h : {c.heads, sh.heads_q % c.heads})
    for (std::int64_t r : {c.rows, sh.seq_q % c.rows})
      if (h > 0 && r > 0) shapes.insert({h, r});
  return shapes;
}

template <typename T>
void run_typed(const AttentionProblem& pr, const std::int64_t* key_lengths, std::uint8_t* row_kernel_rows,
               cudaStream_t stream) {
  const AttentionShape& sh = pr.shape;
  const std::int64_t B = sh.batch, Sq = sh.seq_q, Sk = sh.seq_k, Hq = sh.heads_q, Hkv = sh.heads_kv, D = sh.head_dim;
  const Chunking c = chunking(sh);
  const bool f32_out = sh.dtype == DType::F32;
  // Scratch, reused by every batch item in stream order: scores, v32, bad_v, and o32 (16-bit outputs).
  const std::int64_t score_bytes = round_up(c.heads * c.rows * Sk * 4, 256);
  const std::int64_t v32_bytes = round_up(Sk * Hkv * D * 4, 256), bad_bytes = round_up(Hkv * Sk, 256);
  const std::int64_t o32_bytes = f32_out ? 0 : Sq * Hq * D * 4;
  char* scratch = nullptr;
  DATTN_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch),
                                   std::size_t(score_bytes + v32_bytes + bad_bytes + o32_bytes), stream));
  auto* scores = reinterpret_cast<float*>(scratch);
  auto* v32 = reinterpret_cast<float*>(scratch + score_bytes);
  auto* bad_v = reinterpret_cast<std::uint8_t*>(scratch + score_bytes + v32_bytes);
  auto* o32 = reinterpret_cast<float*>(scratch + score_bytes + v32_bytes + bad_bytes);
  try {
    for (std::int64_t b = 0; b < B; ++b) {
      const std::int64_t vn = Sk * Hkv * D;
      DATTN_CUDA_CHECK(cudaMemsetAsync(bad_v, 0, std::size_t(Hkv * Sk), stream));
      values_to_f32<T><<<copy_blocks(vn), kCopyThreads, 0, stream>>>(static_cast<const T*>(pr.v) + b * vn, v32,
                                                                       bad_v, vn, Sk, Hkv, D);
      DATTN_CUDA_CHECK(cudaGetLastError());
      float* o_base = f32_out ? static_cast<float*>(pr.out) + b * Sq * Hq * D : o32;
      for (std::int64_t h0 = 0; h0 < Hq; h0 += c.heads)
        for (std::int64_t i0 = 0; i0 < Sq; i0 += c.rows) {
          const std::int64_t heads = std::min(c.heads, Hq - h0), rows = std::min(c.rows, Sq - i0);
          ChunkGemms g = chunk_gemms(pr, heads, rows);
          g.scores.a = static_cast<const T*>(pr.k) + (b * Sk * Hkv + h0 / (Hq / Hkv)) * D;
          g.scores.b = static_cast<const T*>(pr.q) + ((b * Sq + i0) * Hq + h0) * D;
          g.scores.c = scores;
          run_strided_gemm(g.scores, stream);
          SoftmaxParams sp{scores, Sk, Sq, Hq, Hq / Hkv, rows, i0, h0, b, key_lengths, pr.key_mask,
                           nullptr, false, 1, sh.causal(), bad_v, row_kernel_rows};
          if (pr.mask) {
            sp.mask = pr.mask->data;
            sp.additive = pr.mask->type == GeneralMaskType::Additive;
            sp.mask_heads = pr.mask->heads;
          }
          masked_softmax_rows<<<unsigned(heads * rows), kSoftmaxThreads, 0, stream>>>(sp);
          DATTN_CUDA_CHECK(cudaGetLastError());
          g.values.a = v32 + (h0 / (Hq / Hkv)) * D;
          g.values.b = scores;
          g.values.c = o_base + (i0 * Hq + h0) * D;
          run_strided_gemm(g.values, stream);
        }
      if (!f32_out) {
        const std::int64_t on = Sq * Hq * D;
        out_from_f32<T><<<copy_blocks(on), kCopyThreads, 0, stream>>>(o32, static_cast<T*>(pr.out) + b * on, on);
        DATTN_CUDA_CHECK(cudaGetLastError());
      }
    }
  } catch (...) {
    cudaFreeAsync(scratch, stream);
    throw;
  }
  DATTN_CUDA_CHECK(cudaFreeAsync(scratch, stream));
}

}  // namespace

std::string sdpa_gemm_refusal(const AttentionProblem& pr) {
  const AttentionShape& sh = pr.shape;
  if (sh.dtype != DType::F32 && sh.dtype != DType::BF16 && sh.dtype != DType::F16)
    return "dtype " + std::string(dtype_name(sh.dtype)) + " is not fp32, bf16 or fp16";
  const Chunking c = chunking(sh);
  if (c.heads == 0)
    return "a row of " + std::to_string(sh.seq_k) + " fp32 scores is more than the " +
           std::to_string(kScoreBytes >> 20) + " MiB of scratch";
  for (const auto& [heads, rows] : chunk_shapes(sh, c)) {
    const ChunkGemms g = chunk_gemms(pr, heads, rows);
    if (std::string why = strided_gemm_refusal(g.scores); !why.empty()) return why;
    if (std::string why = strided_gemm_refusal(g.values); !why.empty()) return why;
  }
  return {};
}

void sdpa_gemm_attention(const AttentionProblem& pr, const std::int64_t* key_lengths, std::uint8_t* row_kernel_rows,
                         void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (pr.shape.dtype) {
    case DType::F32: return run_typed<float>(pr, key_lengths, row_kernel_rows, s);
    case DType::BF16: return run_typed<__nv_bfloat16>(pr, key_lengths, row_kernel_rows, s);
    case DType::F16: return run_typed<__half>(pr, key_lengths, row_kernel_rows, s);
    default: throw UserError("TORCH_SDPA (cuda): " + sdpa_gemm_refusal(pr));
  }
}

}  // namespace dattn::sdpa
