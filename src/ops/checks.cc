#include "ops/checks.h"

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

void no_kernel(const char* op, Device device) {
  throw UserError(std::string(op) + " has no " + (device == Device::CUDA ? "CUDA" : "such") +
                  " implementation yet");
}

}  // namespace dattn::ops::detail
