// The HunyuanVideo-1.5 VAE decoder's mid-block attention: one head as wide as the channels, frame-causal
// over the whole video, streamed: each frame's keys and values join the cache, and its queries attend to
// the cache's prefix up to and including that frame, which is exactly diffusers' mask (frame f sees
// frames 0..f) without making it.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "dattn/ops/combine.h"
#include "dattn/ops/elementwise.h"
#include "dattn/ops/linear.h"
#include "dattn/ops/softmax.h"
#include "dattn/ops/transpose.h"
#include "models/hunyuanvideo15_vae/layers.h"

namespace dattn::hunyuanvideo15_vae {

AttentionBlock::AttentionBlock(LayerInit& init, const std::string& name, int dim)
    : dim_(dim), device_(init.device), norm_(init, name + ".norm", dim, /*images=*/false) {
  // The 1x1x1 Conv3d weights [dim, dim, 1, 1, 1] are the linear layers' [out, in].
  auto weight = [&](const std::string& n) {
    return init.store.take(name + "." + n + ".weight", DType::F32, Device::CPU, {dim, dim, 1, 1, 1})
        .reshape({dim, dim})
        .to(init.device);
  };
  auto bias = [&](const std::string& n) {
    return init.store.take(name + "." + n + ".bias", DType::F32, Device::CPU, {dim}).to(init.device);
  };
  wq_ = weight("to_q"), bq_ = bias("to_q");
  wk_ = weight("to_k"), bk_ = bias("to_k");
  wv_ = weight("to_v"), bv_ = bias("to_v");
  wo_ = weight("proj_out"), bo_ = bias("proj_out");
}

KeyValueCache AttentionBlock::new_cache(std::int64_t frames, std::int64_t pixels) const {
  KeyValueCache c;
  c.keys = Tensor::empty({frames * pixels, dim_}, DType::F32, device_);
  c.values = Tensor::empty({frames * pixels, dim_}, DType::F32, device_);
  return c;
}

Tensor AttentionBlock::forward(const Tensor& x, KeyValueCache& cache, std::int64_t score_bytes) const {
  // float32 throughout, whatever the activations' dtype (a bf16 decode's x is converted here, and the sum
  // with it rounded back once at the end): at the latent resolution this block is a small part of a decode.
  const Tensor xf = ops::cast(x, DType::F32);  // x itself when it is float32
  const Tensor normed = norm_.forward(xf, /*silu=*/false);
  const std::int64_t frames = x.dim(0), pixels = x.dim(1) * x.dim(2), d = dim_;
  if (!cache.keys.defined() || (cache.frames + frames) * pixels > cache.keys.dim(0))
    throw std::logic_error("HunyuanVideo-1.5 VAE attention: " + std::to_string(frames) + " more frames of " +
                           std::to_string(pixels) + " pixels do not fit the key/value cache");
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));  // SDPA's default scale, head_dim = channels
  Tensor out = Tensor::empty(x.shape(), DType::F32, x.device());
  for (std::int64_t f = 0; f < frames; ++f) {
    const Tensor xt = normed.narrow0(f, 1).reshape({pixels, d});  // the frame's pixels as token rows
    const std::int64_t row0 = cache.frames * pixels, keys = row0 + pixels;
    cache.keys.narrow0(row0, pixels).copy_from(ops::linear(xt, wk_, bk_));
    cache.values.narrow0(row0, pixels).copy_from(ops::linear(xt, wv_, bv_));
    ++cache.frames;
    const Tensor q = ops::linear(xt, wq_, bq_);
    const Tensor k = cache.keys.narrow0(0, keys);
    // The value product reads the values as [d, keys] (ops::linear's weight layout).
    const Tensor vt = ops::transpose2d(cache.values.narrow0(0, keys));
    const std::int64_t block = std::clamp<std::int64_t>(score_bytes / (keys * 4), 1, pixels);
    Tensor o = Tensor::empty({pixels, d}, DType::F32, x.device());
    for (std::int64_t q0 = 0; q0 < pixels; q0 += block) {
      const std::int64_t n = std::min(block, pixels - q0);
      o.narrow0(q0, n).copy_from(ops::linear(ops::softmax(ops::linear(q.narrow0(q0, n), k), scale), vt));
    }
    out.narrow0(f, 1).copy_from(ops::linear(o, wo_, bo_).reshape({1, x.dim(1), x.dim(2), d}));
  }
  return ops::add(out, xf, x.dtype());
}

}  // namespace dattn::hunyuanvideo15_vae
