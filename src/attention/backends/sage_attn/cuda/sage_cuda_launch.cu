// SAGE_ATTN on CUDA: support predicate, the workspace of quantized operands (one stream-ordered
// allocation per call, freed in stream order), the quantization pass and the kernel choice.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/backends/sage_attn/cuda/hopper/sage_hopper.h"
#include "attention/backends/sage_attn/cuda/sage_cuda.h"
#include "attention/backends/sage_attn/cuda/sage_nonfinite.h"
#include "attention/backends/sage_attn/cuda/sage_portable.h"
#include "attention/backends/sage_attn/cuda/sage_quant_cuda.h"
#include "attention/backends/sage_attn/sage_quant.h"
#include "core/cuda/check.cuh"
#include "core/cuda/stream.cuh"
#include "dattn/core/error.h"

namespace dattn::sage {
namespace {

using cuda_impl::kTileRows;
using cuda_impl::SageBuffers;

std::size_t align256(std::size_t n) { return (n + 255) / 256 * 256; }
// kv_flags [B * Hkv], any_bad, then v_bad [B * Hkv][D] bytes.
std::size_t flag_bytes(std::size_t bkv, std::size_t d) { return (bkv + 1) * sizeof(unsigned) + bkv * d; }

// The quantized operands and the quantization scratch in one stream-ordered allocation.
class Workspace {
 public:
  explicit Workspace(const AttentionProblem& problem) : stream_(dattn::cuda::stream_or_current(problem.stream)) {
    const AttentionShape& sh = problem.shape;
    SageBuffers& s = buffers_;
    s.batch = static_cast<int>(sh.batch);
    s.heads_q = static_cast<int>(sh.heads_q);
    s.heads_kv = static_cast<int>(sh.heads_kv);
    s.head_dim = static_cast<int>(sh.head_dim);
    s.seq_q = static_cast<int>(sh.seq_q);
    s.seq_k = static_cast<int>(sh.seq_k);
    s.seq_q_pad = static_cast<int>((sh.seq_q + kTileRows - 1) / kTileRows * kTileRows);
    s.seq_k_pad = static_cast<int>(std::max<std::int64_t>(1, (sh.seq_k + kTileRows - 1) / kTileRows) * kTileRows);
    const std::size_t bq = std::size_t(sh.batch) * sh.heads_q, bkv = std::size_t(sh.batch) * sh.heads_kv, D = sh.head_dim;
    const std::size_t sizes[] = {bq * s.seq_q_pad * D,                         // q8
                                 bq * (s.seq_q_pad / kQBlock) * sizeof(float),  // q_scale
                                 bkv * s.seq_k_pad * D,                        // k8
                                 bkv * (s.seq_k_pad / kKBlock) * sizeof(float),  // k_scale
                                 bkv * D * s.seq_k_pad,                        // v8t
                                 bkv * D * sizeof(float),                      // v_scale
                                 std::size_t(sh.batch) * sizeof(int),          // kv_len
                                 bq * s.seq_q_pad,                             // q_bad
                                 flag_bytes(bkv, D)};                          // kv_flags, v_bad, any_bad
    constexpr int kSlots = sizeof(sizes) / sizeof(sizes[0]);
    std::size_t total = 0;
    for (std::size_t n : sizes) total += align256(n);
    total += align256(cuda_impl::quantize_scratch_bytes(s));
    DATTN_CUDA_CHECK(cudaMallocAsync(&base_, total, stream_));
    auto* p = static_cast<unsigned char*>(base_);
    void* slots[kSlots];
    for (int i = 0; i < kSlots; ++i) {
      slots[i] = p;
      p += align256(sizes[i]);
    }
    scratch_ = p;
    s.q8 = static_cast<std::int8_t*>(slots[0]);
    s.q_scale = static_cast<float*>(slots[1]);
    s.k8 = static_cast<std::int8_t*>(slots[2]);
    s.k_scale = static_cast<float*>(slots[3]);
    s.v8t = static_cast<std::uint8_t*>(slots[4]);
    s.v_scale = static_cast<float*>(slots[5]);
    s.kv_len = static_cast<int*>(slots[6]);
    s.q_bad = static_cast<std::uint8_t*>(slots[7]);
    s.kv_flags = static_cast<unsigned*>(slots[8]);
    s.any_bad = s.kv_flags + bkv;
    s.v_bad = reinterpret_cast<std::uint8_t*>(s.any_bad + 1);
    DATTN_CUDA_CHECK(cudaMemsetAsync(slots[8], 0, sizes[8], stream_));  // the flags start clear every call
    s.key_mask = problem.key_mask;
    // Valid key counts: the lengths (clamped to [0, Sk]), else Sk (a key mask then decides per key).
    std::vector<int> lengths(sh.batch, s.seq_k);
    for (std::size_t b = 0; b < problem.key_lengths.size(); ++b)
      lengths[b] = static_cast<int>(std::clamp<std::int64_t>(problem.key_lengths[b], 0, sh.seq_k));
    DATTN_CUDA_CHECK(cudaMemcpyAsync(slots[6], lengths.data(), lengths.size() * sizeof(int), cudaMemcpyHostToDevice,
                                     stream_));
  }
  ~Workspace() { cudaFreeAsync(base_, stream_); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  const SageBuffers& buffers() const { return buffers_; }
  void* scratch() const { return scratch_; }

 private:
  cudaStream_t stream_;
  void* base_ = nullptr;
  void* scratch_ = nullptr;
  SageBuffers buffers_;
};

}  // namespace

Support sage_cuda_supports(const AttentionShape& shape, int cc) {
  if (cc < 80)
    return Support::no("needs compute capability 8.0 or newer (found " + std::to_string(cc / 10) + "." +
                       std::to_string(cc % 10) + ")");
  if (shape.dtype != DType::BF16 && shape.dtype != DType::F16)
    return Support::no("dtype " + std::string(dtype_name(shape.dtype)) + " not in {bf16, fp16}");
  if (shape.head_dim != 64 && shape.head_dim != 128)
    return Support::no("head_dim " + std::to_string(shape.head_dim) + " not in {64, 128}");
  if (shape.mask == MaskKind::General) return Support::no("general masks are supported only by TORCH_SDPA");
  // The kernels index one head's padded rows with int: keep (S + 127) * D below 2^31.
  constexpr std::int64_t kMaxSeq = (std::int64_t(1) << 31) / 128 - 128;
  if (shape.seq_q > kMaxSeq || shape.seq_k > kMaxSeq)
    return Support::no("sequence lengths above " + std::to_string(kMaxSeq) + " are not supported by SAGE_ATTN on cuda");
  if (shape.heads_q > 65535 || shape.batch > 65535)
    return Support::no("more than 65535 heads or batch items are not supported by SAGE_ATTN on cuda");
  return Support::yes();
}

void sage_attention_cuda(const AttentionProblem& problem, SageKernel kernel) {
  const AttentionShape& sh = problem.shape;
  if (sh.batch == 0 || sh.seq_q == 0 || sh.heads_q == 0) return;
  const bool hopper_ok = cuda_impl::sage_hopper_supports(problem);
  if (kernel == SageKernel::Hopper && !hopper_ok)
    throw UserError("SAGE_ATTN (cuda): the Hopper kernel was required (extra kernel 'hopper') but cannot run " +
                    sh.describe() + " on this device (needs sm_90, key lengths not a key mask, aligned output)");
  const Workspace ws(problem);
  cuda_impl::sage_quantize_cuda(problem, ws.buffers(), ws.scratch());
  const auto stream = dattn::cuda::stream_or_current(problem.stream);
  if (hopper_ok && kernel != SageKernel::Portable)
    cuda_impl::sage_attend_hopper(ws.buffers(), problem);
  else
    cuda_impl::sage_attend_portable(ws.buffers(), problem.out, sh.dtype == DType::F16, stream);
  cuda_impl::sage_put_back_nonfinite(ws.buffers(), problem.out, sh.dtype == DType::F16, stream);
}

void sage_quantize_only_cuda(const AttentionProblem& problem) {
  const Workspace ws(problem);
  cuda_impl::sage_quantize_cuda(problem, ws.buffers(), ws.scratch());
}

SageQuantized sage_quantize_download_cuda(const AttentionProblem& problem) {
  const Workspace ws(problem);
  cuda_impl::sage_quantize_cuda(problem, ws.buffers(), ws.scratch());
  const SageBuffers& s = ws.buffers();
  const auto stream = dattn::cuda::stream_or_current(problem.stream);
  const std::size_t bq = std::size_t(s.batch) * s.heads_q, bkv = std::size_t(s.batch) * s.heads_kv, D = s.head_dim;
  SageQuantized h;
  h.seq_q_pad = s.seq_q_pad;
  h.seq_k_pad = s.seq_k_pad;
  const auto fetch = [&](auto& dst, const void* src, std::size_t n) {
    dst.resize(n);
    DATTN_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src, n * sizeof(dst[0]), cudaMemcpyDeviceToHost, stream));
  };
  fetch(h.q8, s.q8, bq * s.seq_q_pad * D);
  fetch(h.q_scale, s.q_scale, bq * (s.seq_q_pad / kQBlock));
  fetch(h.k8, s.k8, bkv * s.seq_k_pad * D);
  fetch(h.k_scale, s.k_scale, bkv * (s.seq_k_pad / kKBlock));
  fetch(h.v8t, s.v8t, bkv * D * s.seq_k_pad);
  fetch(h.v_scale, s.v_scale, bkv * D);
  DATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  return h;
}

}  // namespace dattn::sage
