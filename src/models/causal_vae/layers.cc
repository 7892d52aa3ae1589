// Conv, RmsNorm and the residual block shared by the causal video VAEs (see layers.h).
#include "models/causal_vae/layers.h"

#include <cmath>
#include <string>

#include "dattn/core/error.h"

#include "dattn/ops/combine.h"
#include "dattn/ops/elementwise.h"
#include "dattn/ops/norm.h"

namespace dattn::causal_vae {

void require_vae_dtype(const std::string& model, Device device, DType dtype) {
  if (dtype == DType::F32 || (dtype == DType::BF16 && device == Device::CUDA)) return;
  if (dtype == DType::BF16)
    throw UserError(model + ": dtype bf16 on " + std::string(device_name(device)) +
                    ": the CPU decoder computes in fp32 only (bf16 decodes run on cuda); use fp32 for the VAE");
  throw UserError(model + ": dtype " + std::string(dtype_name(dtype)) +
                  " is not supported: the decoder runs in fp32 (cpu, cuda) or bf16 (cuda)");
}

Conv::Conv(LayerInit& init, const std::string& name, int cin, int cout, int kt, int k, bool conv2d) {
  const Shape shape = conv2d ? Shape{cout, cin, k, k} : Shape{cout, cin, kt, k, k};
  // The weight read in place from the file (CausalConv3d packs it into its own tensor at once).
  const Tensor weight = init.store.host_view(name + ".weight", shape);
  const Tensor bias = init.store.take(name + ".bias", DType::F32, Device::CPU, {cout});
  op_ = ops::CausalConv3d(weight, bias, init.device, init.math, init.pad, init.dtype);
  if (kt > 1) slot_ = init.slots.take();
}

Tensor Conv::forward_unrounded(const Tensor& x, FrameCache& cache, const Tensor& norm_gain) const {
  return op_.forward(x, slot_ >= 0 ? &cache.convs[slot_] : nullptr, norm_gain);
}

Tensor Conv::forward(const Tensor& x, FrameCache& cache, const Tensor& norm_gain) const {
  return ops::cast(forward_unrounded(x, cache, norm_gain), op_.dtype());  // the same tensor when no cast is due
}

RmsNorm::RmsNorm(LayerInit& init, const std::string& name, int dim, bool images) {
  const Shape shape = images ? Shape{dim, 1, 1} : Shape{dim, 1, 1, 1};
  std::vector<float> gain = init.store.take(name + ".gamma", DType::F32, Device::CPU, shape).to_f32_vector();
  const float scale = std::sqrt(static_cast<float>(dim));
  for (float& g : gain) g *= scale;
  gain_ = Tensor::from_f32(gain, {dim}).to(init.device);
}

Tensor RmsNorm::forward(const Tensor& x, bool silu) const { return ops::normalize_channels(x, gain_, silu); }

ResidualBlock::ResidualBlock(LayerInit& init, const std::string& name, int in_dim, int out_dim)
    : norm1_(init, name + ".norm1", in_dim, false),
      norm2_(init, name + ".norm2", out_dim, false),
      conv1_(init, name + ".conv1" + init.causal_conv_suffix, in_dim, out_dim, 3, 3),
      conv2_(init, name + ".conv2" + init.causal_conv_suffix, out_dim, out_dim, 3, 3) {
  if (in_dim != out_dim) shortcut_.emplace_back(init, name + ".conv_shortcut", in_dim, out_dim, 1, 1);
}

Tensor ResidualBlock::forward(const Tensor& x, FrameCache& cache) const {
  const Tensor h = shortcut_.empty() ? x : shortcut_[0].forward(x, cache);
  Tensor y = conv1_.forward(x, cache, norm1_.gain());  // conv1(SiLU(norm1(x)))
  y = conv2_.forward(y, cache, norm2_.gain());         // dropout is the identity at inference
  return ops::add(y, h);
}

}  // namespace dattn::causal_vae
