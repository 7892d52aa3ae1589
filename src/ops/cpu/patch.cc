// Patch embedding (Conv3d with kernel = stride = patch) as gather + GEMM, and its inverse layout.
#include <cstring>
#include <vector>

#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/f32_io.h"

namespace dattn::ops::cpu {

Tensor patch_embed_3d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Patch3& patch) {
  const std::int64_t b = x.dim(0), c = x.dim(1), f = x.dim(2), h = x.dim(3), w = x.dim(4);
  // Plain variables, not a structured binding: the OpenMP region below uses them, and clang before 16
  // cannot capture structured bindings (scripts/check-portability.sh compiles with clang 14).
  const std::int64_t pt = patch[0], ph = patch[1], pw = patch[2];
  const std::int64_t gf = f / pt, gh = h / ph, gw = w / pw, tokens = gf * gh * gw;
  const std::int64_t k = c * pt * ph * pw, out_ch = weight.dim(0);
  F32View xv(x), wv(weight), bv(bias);
  // Row (b, token) of `cols` holds the patch in the weight's (c, pt, ph, pw) order.
  std::vector<float> cols(static_cast<std::size_t>(b * tokens * k));
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t tok = 0; tok < tokens; ++tok) {
      const std::int64_t fi = tok / (gh * gw), hi = tok / gw % gh, wi = tok % gw;
      float* dst = cols.data() + (bi * tokens + tok) * k;
      for (std::int64_t ci = 0; ci < c; ++ci)
        for (std::int64_t a = 0; a < pt; ++a)
          for (std::int64_t r = 0; r < ph; ++r) {
            const float* src = xv.data() + (((bi * c + ci) * f + fi * pt + a) * h + hi * ph + r) * w + wi * pw;
            std::memcpy(dst, src, sizeof(float) * pw);
            dst += pw;
          }
    }
  Tensor y = Tensor::empty({b, tokens, out_ch}, x.dtype());
  F32Sink ys(y);
  gemm_xwt(cols.data(), b * tokens, k, wv.data(), out_ch, bv.data(), ys.data());
  ys.finish();
  return y;
}

Tensor unpatchify_3d(const Tensor& x, const Patch3& grid, const Patch3& patch, std::int64_t channels) {
  const std::int64_t b = x.dim(0);
  // Plain variables for clang before 16, as in patch_embed_3d.
  const std::int64_t gf = grid[0], gh = grid[1], gw = grid[2];
  const std::int64_t pt = patch[0], ph = patch[1], pw = patch[2];
  const std::int64_t f = gf * pt, h = gh * ph, w = gw * pw;
  Tensor y = Tensor::empty({b, channels, f, h, w}, x.dtype());
  const std::size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const unsigned char*>(x.data());
  auto* dst = static_cast<unsigned char*>(y.data());
  // Pure data movement: elements are copied as bytes, in any dtype.
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t ci = 0; ci < channels; ++ci)
      for (std::int64_t fo = 0; fo < f; ++fo)
        for (std::int64_t ho = 0; ho < h; ++ho)
          for (std::int64_t wo = 0; wo < w; ++wo) {
            const std::int64_t tok = ((fo / pt) * gh + ho / ph) * gw + wo / pw;
            const std::int64_t feat = (((fo % pt) * ph + ho % ph) * pw + wo % pw) * channels + ci;
            const std::int64_t from = (bi * gf * gh * gw + tok) * (pt * ph * pw * channels) + feat;
            const std::int64_t to = (((bi * channels + ci) * f + fo) * h + ho) * w + wo;
            std::memcpy(dst + to * es, src + from * es, es);
          }
  return y;
}

}  // namespace dattn::ops::cpu
