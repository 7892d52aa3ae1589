// TORCH_SDPA on CUDA: the entry point (the GEMM kernel of sdpa_gemm.cu, or this file's row kernel, by
// the `kernel` extra) and the row kernel: one warp per query row, two passes over the keys.
//
// Row kernel design (clarity over speed; the reference other kernels are debugged against, and what
// computes the rows the GEMM kernel leaves to it):
//  - Block = kWarps warps = kWarps consecutive query rows of one (b, h); grid is 1-D over
//    (b, h, row tile), so no grid dimension limit applies to B or Hq.
//  - A warp's lanes split the head dim: lane owns d = lane + 32 t. q lives in registers (fp32) for the
//    first 32 * kChunks dims; any larger head dim reads the rest from global memory (L1-resident).
//  - Pass 1 computes every score of the row (fp32 dot product, warp-wide butterfly sum) and keeps the
//    row max. Pass 2 recomputes the same scores (bit-identical: same instructions, same inputs),
//    e = exp(s - max), l += e, acc += e * v. Nothing is materialised, so any Sk works (80k keys cost
//    time, not memory) and every test, small or large, runs this one code path.
//  - Head dims beyond 32 * kChunks (only when > 256) repeat pass 2 per slab of 256 output dims.
//  - Sums over keys are blocked (kKeyChunk keys per partial sum) so the fp32 rounding of l and acc grows
//    with sqrt(kKeyChunk) + sqrt(Sk / kKeyChunk), not sqrt(Sk): at Sk = 20000 a plain running sum
//    would already cost ~5e-6 relative, half the fp32 test limit.
//  - Causal rows stop at their own key (keys after it are never read).
//  - Hidden keys (padding, boolean 0, additive -inf) are skipped, never multiplied by 0, so whatever V
//    holds there (even NaN) never reaches the output; a row whose max stays -inf writes exact zeros. A
//    NaN score makes the row NaN (as in torch); a visible key whose weight underflows still takes part.
// Measured on an H200: 56-96 registers (no spills), no shared memory; Wan2.2-5B self-attention
// (11440 tokens, 24 heads x 128, bf16) ~0.8 s, about 2 TFLOP/s.
#include "attention/backends/torch_sdpa/cuda/sdpa_cuda.h"

#include "attention/backends/torch_sdpa/cuda/f32_values.cuh"
#include "attention/backends/torch_sdpa/cuda/sdpa_gemm.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "core/cuda/check.cuh"
#include "core/cuda/stream.cuh"
#include "dattn/core/error.h"

namespace dattn::sdpa {
namespace {

constexpr int kWarps = 4;                // query rows per block, one warp each
constexpr std::int64_t kKeyChunk = 256;  // keys per partial sum (blocked summation)

// Butterfly sum: every lane ends with the same bits (fp32 addition is commutative, and each step
// adds the same two values in both partner lanes).
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

struct Params {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  std::int64_t Sq, Sk, Hq, Hkv, D, group;  // group = Hq / Hkv
  std::int64_t row_tiles;                  // ceil(Sq / kWarps)
  float scale;
  const std::int64_t* key_lengths;  // device [B] or null
  const std::uint8_t* key_mask;     // device [B, Sk] or null
  const void* mask;                 // device [B, mask_heads, Sq, Sk] or null
  bool mask_additive;               // float32 added to the scores, else uint8 boolean
  std::int64_t mask_heads;
  bool causal;  // query i sees keys j <= i (Sq == Sk)
  const std::uint8_t* only_rows;  // device [B, Hq, Sq] or null: compute only the rows marked 1
};

template <typename T, int kChunks>
__global__ void __launch_bounds__(kWarps * 32) sdpa_rows_kernel(const Params p) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  constexpr int kSlab = 32 * kChunks;  // head dims held in registers per lane set
  const int lane = threadIdx.x & 31;
  const std::int64_t tile = blockIdx.x % p.row_tiles;
  const std::int64_t bh = blockIdx.x / p.row_tiles;
  const std::int64_t h = bh % p.Hq, b = bh / p.Hq;
  const std::int64_t i = tile * kWarps + (threadIdx.x >> 5);
  if (i >= p.Sq) return;  // whole warp leaves; nothing below synchronises across warps
  if (p.only_rows && p.only_rows[bh * p.Sq + i] == 0) return;

  const std::int64_t D = p.D, key_stride = p.Hkv * D;  // elements between consecutive keys
  const std::int64_t hkv = h / p.group;
  const T* qrow = static_cast<const T*>(p.q) + ((b * p.Sq + i) * p.Hq + h) * D;
  const T* kbase = static_cast<const T*>(p.k) + (b * p.Sk * p.Hkv + hkv) * D;
  const T* vbase = static_cast<const T*>(p.v) + (b * p.Sk * p.Hkv + hkv) * D;
  T* orow = static_cast<T*>(p.out) + ((b * p.Sq + i) * p.Hq + h) * D;
  // Key padding as lengths: only the first n_keys keys exist for this batch item.
  // Causal: keys after the query are not visited at all (same as hiding them, and half the work).
  const std::int64_t len = p.key_lengths ? p.key_lengths[b] : p.Sk;
  const std::int64_t n_keys = p.causal && i + 1 < len ? i + 1 : len;
  const std::uint8_t* kmask = p.key_mask ? p.key_mask + b * p.Sk : nullptr;
  const std::int64_t mask_row =
      p.mask ? ((b * p.mask_heads + (p.mask_heads == 1 ? 0 : h)) * p.Sq + i) * p.Sk : 0;
  const std::uint8_t* bool_mask = p.mask && !p.mask_additive ? static_cast<const std::uint8_t*>(p.mask) + mask_row : nullptr;
  const float* add_mask = p.mask && p.mask_additive ? static_cast<const float*>(p.mask) + mask_row : nullptr;

  float qr[kChunks];
#pragma unroll
  for (int t = 0; t < kChunks; ++t) {
    const int d = lane + 32 * t;
    qr[t] = d < D ? to_f32(qrow[d]) : 0.0f;
  }

  // Keys hidden by padding or a boolean 0 (warp-uniform). Additive -inf is seen in the score.
  auto hidden = [&](std::int64_t j) { return (kmask && kmask[j] == 0) || (bool_mask && bool_mask[j] == 0); };
  // The fp32 score of key j, identical in every lane.
  auto score = [&](std::int64_t j) -> float {
    const T* krow = kbase + j * key_stride;
    float dot = 0.0f;
#pragma unroll
    for (int t = 0; t < kChunks; ++t) {
      const int d = lane + 32 * t;
      if (d < D) dot = fmaf(qr[t], to_f32(krow[d]), dot);
    }
    for (std::int64_t d = kSlab + lane; d < D; d += 32) dot = fmaf(to_f32(qrow[d]), to_f32(krow[d]), dot);
    float s = p.scale * warp_sum(dot);
    if (add_mask) s += add_mask[j];
    return s;
  };

  // Pass 1: the row max. fmaxf ignores a NaN score, so NaN is tracked beside it: one NaN score makes
  // the softmax, and so the whole row, NaN (as in torch); a row of NaN scores is not "no valid key".
  float row_max = kNegInf;
  bool nan = false;
  for (std::int64_t j = 0; j < n_keys; ++j)
    if (!hidden(j)) {
      const float s = score(j);
      row_max = fmaxf(row_max, s);
      nan |= s != s;
    }
  if (nan || row_max == kNegInf) {  // a NaN row, or no valid key: exact zeros
    const float fill = nan ? __int_as_float(0x7fc00000) : 0.0f;
    for (std::int64_t d = lane; d < D; d += 32) orow[d] = from_f32<T>(fill);
    return;
  }

  // Pass 2, once per slab of kSlab output dims (once for D <= kSlab).
  for (std::int64_t d0 = 0; d0 < D; d0 += kSlab) {
    float acc[kChunks], l = 0.0f;
#pragma unroll
    for (int t = 0; t < kChunks; ++t) acc[t] = 0.0f;
    for (std::int64_t j0 = 0; j0 < n_keys; j0 += kKeyChunk) {
      const std::int64_t j1 = j0 + kKeyChunk < n_keys ? j0 + kKeyChunk : n_keys;
      float part[kChunks], l_part = 0.0f;
#pragma unroll
      for (int t = 0; t < kChunks; ++t) part[t] = 0.0f;
      for (std::int64_t j = j0; j < j1; ++j) {
        if (hidden(j)) continue;  // V of a hidden key is never read
        // V is loaded before the score is known (key j exists, so the read is in bounds) so that both
        // loads are in flight together; it is used only when the weight is nonzero.
        const T* vrow = vbase + j * key_stride + d0;
        float vv[kChunks];
#pragma unroll
        for (int t = 0; t < kChunks; ++t) {
          const int d = lane + 32 * t;
          vv[t] = d0 + d < D ? to_f32(vrow[d]) : 0.0f;
        }
        const float s = score(j);
        // Additive -inf hides the key: skipped like on the CPU, so its V (maybe NaN) is never used. A
        // visible key whose weight underflows to 0 still takes part (0 * NaN), as in torch.
        if (s == kNegInf) continue;
        const float e = expf(s - row_max);
        l_part += e;
#pragma unroll
        for (int t = 0; t < kChunks; ++t) part[t] = fmaf(e, vv[t], part[t]);
      }
      l += l_part;
#pragma unroll
      for (int t = 0; t < kChunks; ++t) acc[t] += part[t];
    }
  // l >= 1: the max key is recomputed bit-identically in pass 2 and contributes exp(0) = 1.
#pragma unroll
    for (int t = 0; t < kChunks; ++t) {
      const std::int64_t d = d0 + lane + 32 * t;
      if (d < D) orow[d] = from_f32<T>(acc[t] / l);
    }
  }
}

template <typename T>
void launch(const Params& prm, unsigned blocks, cudaStream_t stream) {
  // Registers hold 32 * kChunks dims of q and acc per lane set: the smallest that covers D (<= 256).
  const dim3 grid(blocks), block(kWarps * 32);
  if (prm.D <= 32)
    sdpa_rows_kernel<T, 1><<<grid, block, 0, stream>>>(prm);
  else if (prm.D <= 64)
    sdpa_rows_kernel<T, 2><<<grid, block, 0, stream>>>(prm);
  else if (prm.D <= 128)
    sdpa_rows_kernel<T, 4><<<grid, block, 0, stream>>>(prm);
  else
    sdpa_rows_kernel<T, 8><<<grid, block, 0, stream>>>(prm);
}

// Device copy of the host key_lengths, allocated and freed in stream order (no synchronisation).
class StreamBuffer {
 public:
  StreamBuffer(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    DATTN_CUDA_CHECK(cudaMallocAsync(&ptr_, bytes, stream));
  }
  ~StreamBuffer() { cudaFreeAsync(ptr_, stream_); }
  // From pageable memory this returns once the data is staged, so the host vector may go away.
  void upload(const void* host, std::size_t bytes) {
    DATTN_CUDA_CHECK(cudaMemcpyAsync(ptr_, host, bytes, cudaMemcpyHostToDevice, stream_));
  }
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_;
};

SdpaKernel resolve_kernel(const AttentionProblem& pr, SdpaKernel kernel) {
  if (kernel == SdpaKernel::Rows) return kernel;
  const std::string why = sdpa_gemm_refusal(pr);
  if (why.empty()) return SdpaKernel::Gemm;
  if (kernel == SdpaKernel::Gemm)
    throw UserError("TORCH_SDPA (cuda): extra kernel 'gemm' cannot run " + pr.shape.describe() + ": " + why +
                    " (use kernel 'auto' or 'rows')");
  return SdpaKernel::Rows;
}

}  // namespace

void sdpa_attention_cuda(const AttentionProblem& pr, SdpaKernel kernel) {
  const AttentionShape& sh = pr.shape;
  const cudaStream_t stream = dattn::cuda::stream_or_current(pr.stream);
  Params prm{};
  prm.q = pr.q;
  prm.k = pr.k;
  prm.v = pr.v;
  prm.out = pr.out;
  prm.Sq = sh.seq_q;
  prm.Sk = sh.seq_k;
  prm.Hq = sh.heads_q;
  prm.Hkv = sh.heads_kv;
  prm.D = sh.head_dim;
  prm.group = sh.heads_q / sh.heads_kv;
  prm.row_tiles = (sh.seq_q + kWarps - 1) / kWarps;
  prm.scale = pr.softmax_scale();
  prm.key_mask = pr.key_mask;
  prm.causal = sh.causal();
  if (pr.mask) {
    prm.mask = pr.mask->data;
    prm.mask_additive = pr.mask->type == GeneralMaskType::Additive;
    prm.mask_heads = pr.mask->heads;
  }
  if (sh.dtype != DType::F32 && sh.dtype != DType::BF16 && sh.dtype != DType::F16)
    throw UserError("sdpa (cuda): dtype " + std::string(dtype_name(sh.dtype)) + " is not fp32, bf16 or fp16");
  const std::int64_t blocks = sh.batch * sh.heads_q * prm.row_tiles;
  if (blocks > std::numeric_limits<int>::max())
    throw UserError("sdpa (cuda): " + sh.describe() + " needs " + std::to_string(blocks) +
                    " blocks, more than one launch takes");
  const bool gemm = resolve_kernel(pr, kernel) == SdpaKernel::Gemm;

  std::optional<StreamBuffer> lengths;
  if (!pr.key_lengths.empty()) {
    const std::size_t bytes = pr.key_lengths.size() * sizeof(std::int64_t);
    lengths.emplace(bytes, stream);
    lengths->upload(pr.key_lengths.data(), bytes);
    prm.key_lengths = static_cast<const std::int64_t*>(lengths->get());
  }
  // The GEMM kernel computes every row but those it marks; the row kernel then computes exactly those.
  std::optional<StreamBuffer> marked;
  if (gemm) {
    const std::size_t rows = std::size_t(sh.batch * sh.heads_q * sh.seq_q);
    marked.emplace(rows, stream);
    auto* marks = static_cast<std::uint8_t*>(marked->get());
    DATTN_CUDA_CHECK(cudaMemsetAsync(marks, 0, rows, stream));
    sdpa_gemm_attention(pr, prm.key_lengths, marks, stream);
    prm.only_rows = marks;
  }
  switch (sh.dtype) {
    case DType::F32: launch<float>(prm, unsigned(blocks), stream); break;
    case DType::BF16: launch<__nv_bfloat16>(prm, unsigned(blocks), stream); break;
    default: launch<__half>(prm, unsigned(blocks), stream); break;  // F16, checked above
  }
  DATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dattn::sdpa
