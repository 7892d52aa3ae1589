// Conditioning lookups and batch concatenation (see denoiser.h).
#include <string>

#include "dattn/core/error.h"
#include "dattn/models/denoiser.h"

namespace dattn {

const Tensor& Conditioning::at(const std::string& name) const {
  const auto it = tensors.find(name);
  if (it != tensors.end()) return it->second;
  std::string present;
  for (const auto& [key, value] : tensors) present += (present.empty() ? "" : ", ") + key;
  throw UserError("conditioning has no input '" + name + "' (present: " + (present.empty() ? "none" : present) + ")");
}

Tensor concat_batch(const Tensor& a, const Tensor& b) {
  const bool same_rest = a.ndim() >= 1 && a.ndim() == b.ndim() &&
                         Shape(a.shape().begin() + 1, a.shape().end()) == Shape(b.shape().begin() + 1, b.shape().end());
  if (!same_rest || a.dtype() != b.dtype() || a.device() != b.device())
    throw UserError("concat_batch: " + a.describe() + " and " + b.describe() +
                    " must have one dtype and device and equal shapes past dimension 0");
  Shape shape = a.shape();
  shape[0] = a.dim(0) + b.dim(0);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  out.narrow0(0, a.dim(0)).copy_from(a);
  out.narrow0(a.dim(0), b.dim(0)).copy_from(b);
  return out;
}

Conditioning concat_batch(const Conditioning& a, const Conditioning& b) {
  Conditioning out;
  for (const auto& [name, ta] : a.tensors) out.tensors[name] = concat_batch(ta, b.at(name));
  for (const auto& [name, tb] : b.tensors)
    if (!a.tensors.count(name)) throw UserError("concat_batch: conditioning input '" + name + "' is only in the second");
  return out;
}

}  // namespace dattn
