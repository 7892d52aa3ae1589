#include "ops/checks.h"

#include <initializer_list>
#include <utility>

#include "dattn/core/error.h"

namespace dattn::ops::detail {

namespace {
std::string head(const char* op, const char* arg, const Tensor& t) {
  return std::string(op) + ": " + arg + " " + (t.defined() ? t.describe() : std::string("(undefined)"));
}
}  // namespace

void require_defined(const char* op, const char* arg, const Tensor& t) {
  if (!t.defined()) throw UserError(std::string(op) + ": " + arg + " is undefined; expected a tensor");
}

void require_float(const char* op, const char* arg, const Tensor& t) {
  require_defined(op, arg, t);
  const DType d = t.dtype();
  if (d != DType::F32 && d != DType::BF16 && d != DType::F16)
    throw UserError(head(op, arg, t) + ": expected dtype fp32, bf16 or fp16");
}

void require_f32(const char* op, const char* arg, const Tensor& t) {
  require_defined(op, arg, t);
  if (t.dtype() != DType::F32) throw UserError(head(op, arg, t) + ": expected dtype fp32");
}

void require_ndim(const char* op, const char* arg, const Tensor& t, int ndim, const char* layout) {
  if (t.ndim() != ndim)
    throw UserError(head(op, arg, t) + ": expected " + std::to_string(ndim) + " dimensions " + layout);
}

void require_shape(const char* op, const char* arg, const Tensor& t, const Shape& expected) {
  if (t.shape() != expected) throw UserError(head(op, arg, t) + ": expected shape " + shape_str(expected));
}

void require_same_device(const char* op, const Tensor& first, const char* arg, const Tensor& t) {
  if (t.device() != first.device())
    throw UserError(head(op, arg, t) + ": expected it on " + std::string(device_name(first.device())) +
                    " like the input");
}

void require_window(const char* op, const Tensor& x, const Shape& y_shape, const RowWindow& window) {
  require_defined(op, "window.out", window.out);
  const Tensor& out = window.out;
  if (y_shape.size() < 2) throw UserError(head(op, "x", x) + ": expected [B, S, ...] to write into rows of window.out");
  bool same = out.ndim() == static_cast<int>(y_shape.size()) && out.dtype() == x.dtype() && out.device() == x.device();
  for (int i = 0; same && i < out.ndim(); ++i) same = i == 1 || out.dim(i) == y_shape[static_cast<std::size_t>(i)];
  if (!same)
    throw UserError(head(op, "window.out", out) + ": expected " + std::string(dtype_name(x.dtype())) + " on " +
                    std::string(device_name(x.device())) + ", shaped " + shape_str(y_shape) + " but for dimension 1");
  if (window.row < 0 || window.row > out.dim(1) - y_shape[1])
    throw UserError(std::string(op) + ": window row " + std::to_string(window.row) + ": the " +
                    std::to_string(y_shape[1]) + " rows must fit in window.out's " + std::to_string(out.dim(1)));
}

void require_rope_tables(const char* op, const Tensor& x, const Tensor& cos, const Tensor& sin) {
  for (const auto& [name, t] : {std::pair{"cos", &cos}, std::pair{"sin", &sin}}) {
    require_defined(op, name, *t);
    require_f32(op, name, *t);
    require_ndim(op, name, *t, 2, "[S, Dr]");
    require_same_device(op, x, name, *t);
  }
  const std::int64_t dr = cos.dim(1);
  require_shape(op, "cos", cos, {x.dim(1), dr});
  require_shape(op, "sin", sin, {x.dim(1), dr});
  if (dr == 0 || dr % 2 != 0 || x.dim(3) % dr != 0)
    throw UserError(std::string(op) + ": cos " + cos.describe() + " and x " + x.describe() +
                    ": the rotary width (cos.dim(1)) must be even and divide x's last dimension");
}

void require_norm_input(const char* op, const Tensor& x, float eps) {
  require_float(op, "x", x);
  if (x.ndim() < 1) throw UserError(std::string(op) + ": x " + x.describe() + " has no last dimension");
  if (!(eps >= 0)) throw UserError(std::string(op) + ": eps " + std::to_string(eps) + ": expected >= 0");
}

void require_norm_param(const char* op, const char* arg, const Tensor& x, const Tensor& p) {
  if (!p.defined()) return;
  require_float(op, arg, p);
  require_shape(op, arg, p, {x.dim(-1)});
  require_same_device(op, x, arg, p);
}

void require_layer_norm_params(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.defined() != bias.defined())
    throw UserError(std::string(op) + ": weight and bias must be given together (or neither)");
  require_norm_param(op, "weight", x, weight);
  require_norm_param(op, "bias", x, bias);
}

void no_kernel(const char* op, Device device) {
  throw UserError(std::string(op) + " has no " + (device == Device::CUDA ? "CUDA" : "such") +
                  " implementation yet");
}

}  // namespace dattn::ops::detail
