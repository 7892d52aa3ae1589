// layer_norm and rms_norm on CUDA (the kernel is in row_norm.cuh).
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/row_norm.cuh"

namespace dattn::ops::cuda {

Tensor layer_norm(const Tensor& x, float eps, const Tensor& weight, const Tensor& bias) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CUDA);
  RowNormArgs p;
  p.x = x.data(), p.y = y.data(), p.ex = elt_of(x.dtype());
  p.d = x.dim(-1), p.rows = p.d ? x.numel() / p.d : 0, p.eps = eps;
  if (weight.defined()) p.w = weight.data(), p.ew = elt_of(weight.dtype());
  if (bias.defined()) p.b = bias.data(), p.eb = elt_of(bias.dtype());
  launch_row_norm<NormKind::Layer>(p, x.dtype(), "layer_norm", current_stream());
  return y;
}

Tensor rms_norm(const Tensor& x, float eps, const Tensor& weight) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CUDA);
  RowNormArgs p;
  p.x = x.data(), p.y = y.data(), p.ex = elt_of(x.dtype());
  p.d = x.dim(-1), p.rows = p.d ? x.numel() / p.d : 0, p.eps = eps;
  if (weight.defined()) p.w = weight.data(), p.ew = elt_of(weight.dtype());
  launch_row_norm<NormKind::Rms>(p, x.dtype(), "rms_norm", current_stream());
  return y;
}

Tensor rms_norm_rope_interleaved(const Tensor& x, float eps, const Tensor& weight, const Tensor& cos,
                                 const Tensor& sin) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CUDA);
  RowNormArgs p;
  p.x = x.data(), p.y = y.data(), p.ex = elt_of(x.dtype());
  p.d = x.dim(-1), p.rows = p.d ? x.numel() / p.d : 0, p.eps = eps;
  if (weight.defined()) p.w = weight.data(), p.ew = elt_of(weight.dtype());
  p.rope_cos = cos.data_as<float>(), p.rope_sin = sin.data_as<float>();
  p.rope_s = x.dim(1), p.rope_rows_per_token = x.dim(2), p.rope_d = cos.dim(1);
  launch_row_norm<NormKind::Rms>(p, x.dtype(), "rms_norm_rope_interleaved", current_stream());
  return y;
}

}  // namespace dattn::ops::cuda
