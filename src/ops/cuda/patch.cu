// patch_embed_3d (gather of each patch into a row, then one GEMM through linear) and unpatchify_3d (the
// inverse rearrangement) on CUDA. Both run once per forward on the latents, so the kernels favour
// simplicity: one thread per element, writes coalesced, elements moved as raw bytes of their size.
#include <cstdint>

#include "ops/cuda/common.cuh"
#include "ops/cuda/cuda_ops.h"

namespace dattn::ops::cuda {
namespace {

template <class E>
__global__ void patch_gather_kernel(const E* x, E* cols, i64 c, i64 f, i64 h, i64 w, i64 pt, i64 ph, i64 pw, i64 gh,
                                    i64 gw, i64 tokens, i64 n) {
  const i64 k = c * pt * ph * pw;
  const i64 stride = i64{gridDim.x} * blockDim.x;
  for (i64 e = i64{blockIdx.x} * blockDim.x + threadIdx.x; e < n; e += stride) {
    // cols[(b, token), (ci, a, r, q)]: the weight's (c, pt, ph, pw) order.
    const i64 row = e / k, col = e % k;
    const i64 b = row / tokens, tok = row % tokens;
    const i64 fi = tok / (gh * gw), hi = tok / gw % gh, wi = tok % gw;
    const i64 q = col % pw, r = col / pw % ph, a = col / (pw * ph) % pt, ci = col / (pw * ph * pt);
    cols[e] = x[(((b * c + ci) * f + fi * pt + a) * h + hi * ph + r) * w + wi * pw + q];
  }
}

template <class E>
__global__ void unpatchify_kernel(const E* x, E* y, i64 channels, i64 gf, i64 gh, i64 gw, i64 pt, i64 ph, i64 pw,
                                  i64 n) {
  const i64 f = gf * pt, h = gh * ph, w = gw * pw;
  const i64 stride = i64{gridDim.x} * blockDim.x;
  for (i64 e = i64{blockIdx.x} * blockDim.x + threadIdx.x; e < n; e += stride) {
    // y[b, ci, fo, ho, wo] <- x[b, token, (fo % pt, ho % ph, wo % pw, ci)]
    const i64 wo = e % w, ho = e / w % h, fo = e / (w * h) % f, ci = e / (w * h * f) % channels;
    const i64 b = e / (w * h * f * channels);
    const i64 tok = ((fo / pt) * gh + ho / ph) * gw + wo / pw;
    const i64 feat = (((fo % pt) * ph + ho % ph) * pw + wo % pw) * channels + ci;
    y[e] = x[(b * gf * gh * gw + tok) * (pt * ph * pw * channels) + feat];
  }
}

// Calls body(E{}) with E an unsigned integer of the element size (the kernels only move bytes).
template <class F>
void by_element_size(std::size_t size, F body, const char* op) {
  switch (size) {
    case 1: return body(std::uint8_t{});
    case 2: return body(std::uint16_t{});
    case 4: return body(std::uint32_t{});
    case 8: return body(std::uint64_t{});
    default: throw UserError(std::string(op) + " (cuda): element size " + std::to_string(size) + " not supported");
  }
}

}  // namespace

Tensor patch_embed_3d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Patch3& patch) {
  const i64 b = x.dim(0), c = x.dim(1), f = x.dim(2), h = x.dim(3), w = x.dim(4);
  const i64 pt = patch[0], ph = patch[1], pw = patch[2];  // no structured bindings: the lambda captures them
  const i64 gh = h / ph, gw = w / pw, tokens = (f / pt) * gh * gw;
  const i64 k = c * pt * ph * pw, out_ch = weight.dim(0);
  Tensor cols = Tensor::empty({b * tokens, k}, x.dtype(), Device::CUDA);
  const i64 n = cols.numel();
  if (n > 0) {
    constexpr int kThreads = 256;
    const cudaStream_t stream = current_stream();
    by_element_size(dtype_size(x.dtype()), [&](auto e) {
      using E = decltype(e);
      patch_gather_kernel<E><<<grid_for(n, kThreads), kThreads, 0, stream>>>(static_cast<const E*>(x.data()),
                                                                  static_cast<E*>(cols.data()), c, f, h, w, pt, ph,
                                                                  pw, gh, gw, tokens, n);
    }, "patch_embed_3d");
    check_launch("patch_embed_3d");
  }
  return linear(cols, weight.reshape({out_ch, k}), bias).reshape({b, tokens, out_ch});
}

Tensor unpatchify_3d(const Tensor& x, const Patch3& grid, const Patch3& patch, std::int64_t channels) {
  const i64 b = x.dim(0);
  const i64 gf = grid[0], gh = grid[1], gw = grid[2], pt = patch[0], ph = patch[1], pw = patch[2];
  Tensor y = Tensor::empty({b, channels, gf * pt, gh * ph, gw * pw}, x.dtype(), Device::CUDA);
  const i64 n = y.numel();
  if (n == 0) return y;
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  by_element_size(dtype_size(x.dtype()), [&](auto e) {
    using E = decltype(e);
    unpatchify_kernel<E><<<grid_for(n, kThreads), kThreads, 0, stream>>>(static_cast<const E*>(x.data()),
                                                              static_cast<E*>(y.data()), channels, gf, gh, gw, pt,
                                                              ph, pw, n);
  }, "unpatchify_3d");
  check_launch("unpatchify_3d");
  return y;
}

}  // namespace dattn::ops::cuda
