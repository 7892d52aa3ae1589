// layer_norm and rms_norm on CUDA (the kernel is in row_norm.cuh), into a new tensor or a row window.
#include <cstdlib>
#include <string>

#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/row_norm.cuh"

namespace dattn::ops::cuda {
namespace {

RowNormArgs rms_args(const Tensor& x, float eps, const Tensor& weight) {
  RowNormArgs p;
  p.x = x.data(), p.ex = elt_of(x.dtype());
  p.d = x.dim(-1), p.rows = p.d ? x.numel() / p.d : 0, p.eps = eps;
  if (weight.defined()) p.w = weight.data(), p.ew = elt_of(weight.dtype());
  return p;
}

void add_rope(RowNormArgs& p, const Tensor& x, const Tensor& cos, const Tensor& sin) {
  p.rope_cos = cos.data_as<float>(), p.rope_sin = sin.data_as<float>();
  p.rope_s = x.dim(1), p.rope_rows_per_token = x.dim(2), p.rope_d = cos.dim(1);
}

// Rows of item b of x [B, S, ...] go to rows row.. of item b of the window (in rows of D elements).
void add_window(RowNormArgs& p, const Tensor& x, const RowWindow& into) {
  Tensor out = into.out;
  p.y = out.data();
  const i64 tokens = x.dim(0) * x.dim(1);
  const i64 per_token = tokens ? p.rows / tokens : 0;  // rows of D per token
  p.in_item_rows = x.dim(1) * per_token;
  p.out_item_rows = out.dim(1) * per_token;
  p.out_row0 = into.row * per_token;
}

}  // namespace

LongRowKernel long_row_kernel() {
  static const LongRowKernel choice = [] {
    const char* v = std::getenv("DATTN_ROW_NORM_KERNEL");
    const std::string s = v ? v : "";
    if (s.empty()) return LongRowKernel::Auto;
    if (s == "block2") return LongRowKernel::Block2;
    if (s == "block1") return LongRowKernel::Block1;
    if (s == "group") return LongRowKernel::Group;
    if (s == "rows2") return LongRowKernel::Rows2;
    if (s == "lean") return LongRowKernel::Lean;
    if (s == "lean40") return LongRowKernel::Lean40;
    throw UserError("DATTN_ROW_NORM_KERNEL '" + s + "': expected block2, block1, group, rows2, lean or lean40 (or unset)");
  }();
  return choice;
}

Tensor layer_norm(const Tensor& x, float eps, const Tensor& weight, const Tensor& bias) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CUDA);
  launch_row_norm<NormKind::Layer>(layer_norm_args(x, y, eps, weight, bias), x.dtype(), "layer_norm", current_stream());
  return y;
}

Tensor rms_norm(const Tensor& x, float eps, const Tensor& weight) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CUDA);
  RowNormArgs p = rms_args(x, eps, weight);
  p.y = y.data();
  launch_row_norm<NormKind::Rms>(p, x.dtype(), "rms_norm", current_stream());
  return y;
}

void rms_norm(const Tensor& x, float eps, const Tensor& weight, const RowWindow& into) {
  RowNormArgs p = rms_args(x, eps, weight);
  add_window(p, x, into);
  launch_row_norm<NormKind::Rms>(p, x.dtype(), "rms_norm", current_stream());
}

Tensor rms_norm_rope_interleaved(const Tensor& x, float eps, const Tensor& weight, const Tensor& cos,
                                 const Tensor& sin) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CUDA);
  RowNormArgs p = rms_args(x, eps, weight);
  p.y = y.data();
  add_rope(p, x, cos, sin);
  launch_row_norm<NormKind::Rms>(p, x.dtype(), "rms_norm_rope_interleaved", current_stream());
  return y;
}

void rms_norm_rope_interleaved(const Tensor& x, float eps, const Tensor& weight, const Tensor& cos, const Tensor& sin,
                               const RowWindow& into) {
  RowNormArgs p = rms_args(x, eps, weight);
  add_rope(p, x, cos, sin);
  add_window(p, x, into);
  launch_row_norm<NormKind::Rms>(p, x.dtype(), "rms_norm_rope_interleaved", current_stream());
}

}  // namespace dattn::ops::cuda
