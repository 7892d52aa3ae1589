// The Wan VAE decoder's mid-block attention: one head as wide as the channels over the pixels of each
// frame, as float32 matrix products (ops::linear: no TF32 on CUDA) and a row softmax.
#include <algorithm>
#include <cmath>

#include "dattn/ops/combine.h"
#include "dattn/ops/elementwise.h"
#include "dattn/ops/linear.h"
#include "dattn/ops/softmax.h"
#include "models/wan_vae/layers.h"

namespace dattn::wan_vae {

AttentionBlock::AttentionBlock(LayerInit& init, const std::string& name, int dim)
    : dim_(dim), norm_(init, name + ".norm", dim, true) {
  const std::int64_t d = dim;
  auto take = [&](const std::string& n, const Shape& s) {
    return init.store.take(name + n, DType::F32, Device::CPU, s).to_f32_vector();
  };
  const std::vector<float> wqkv = take(".to_qkv.weight", {3 * d, d, 1, 1}), bqkv = take(".to_qkv.bias", {3 * d});
  const std::vector<float> wp = take(".proj.weight", {d, d, 1, 1}), bp = take(".proj.bias", {d});
  const auto part = [&](const std::vector<float>& v, std::int64_t i, std::int64_t width, const Shape& shape) {
    return Tensor::from_f32(std::vector<float>(v.begin() + i * width, v.begin() + (i + 1) * width), shape)
        .to(init.device);
  };
  wq_ = part(wqkv, 0, d * d, {d, d});
  wk_ = part(wqkv, 1, d * d, {d, d});
  wv_ = part(wqkv, 2, d * d, {d, d});
  bq_ = part(bqkv, 0, d, {d});
  bk_ = part(bqkv, 1, d, {d});
  // v's bias passes through attention unchanged (each softmax row sums to 1), so it is folded into proj's:
  // proj(P (V + bv)) = Wp P V + (Wp bv + bp). That keeps v a plain product in the [dim, pixels] layout.
  std::vector<float> folded(d);
  for (std::int64_t o = 0; o < d; ++o) {
    double s = bp[o];
    for (std::int64_t c = 0; c < d; ++c) s += static_cast<double>(wp[o * d + c]) * bqkv[2 * d + c];
    folded[o] = static_cast<float>(s);
  }
  wp_ = Tensor::from_f32(wp, {d, d}).to(init.device);
  bp_ = Tensor::from_f32(folded, {d}).to(init.device);
}

Tensor AttentionBlock::forward(const Tensor& x, std::int64_t score_bytes) const {
  // float32 throughout, whatever the activations' dtype (a bf16 decode's x is converted here, and the sum
  // with it rounded back once at the end): at the latent resolution this block is a small part of a decode.
  const Tensor xf = ops::cast(x, DType::F32);  // x itself when it is float32
  const Tensor normed = norm_.forward(xf, /*silu=*/false);
  const std::int64_t frames = x.dim(0), pixels = x.dim(1) * x.dim(2), d = dim_;
  const std::int64_t block = std::clamp<std::int64_t>(score_bytes / (pixels * 4), 1, pixels);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Tensor out = frames == 1 ? Tensor() : Tensor::empty(x.shape(), DType::F32, x.device());
  for (std::int64_t f = 0; f < frames; ++f) {
    // The frame's pixels are the token rows xt [pixels, d]; v is made as [d, pixels] = Wv xtᵀ, the layout
    // the second product reads it in.
    const Tensor xt = normed.narrow0(f, 1).reshape({pixels, d});
    const Tensor q = ops::linear(xt, wq_, bq_), k = ops::linear(xt, wk_, bk_), vt = ops::linear(wv_, xt);
    Tensor o = block == pixels ? Tensor() : Tensor::empty({pixels, d}, DType::F32, x.device());
    for (std::int64_t q0 = 0; q0 < pixels; q0 += block) {
      const std::int64_t n = std::min(block, pixels - q0);
      const Tensor attended = ops::linear(ops::softmax(ops::linear(q.narrow0(q0, n), k), scale), vt);
      if (block == pixels)
        o = attended;
      else
        o.narrow0(q0, n).copy_from(attended);
    }
    const Tensor projected = ops::linear(o, wp_, bp_).reshape({1, x.dim(1), x.dim(2), d});
    if (frames == 1)
      out = projected;
    else
      out.narrow0(f, 1).copy_from(projected);
  }
  return ops::add(out, xf, x.dtype());
}

}  // namespace dattn::wan_vae
