#pragma once
// A tensor seen as fp32: the caller's buffer when it already is fp32, else an exact converted copy.
// CPU backends compute in fp32 whatever the storage dtype.
#include <cstddef>
#include <vector>

#include "dattn/core/dtype.h"

namespace dattn {

class F32View {
 public:
  F32View(const void* data, DType dtype, std::size_t n) {
    if (dtype == DType::F32) {
      data_ = static_cast<const float*>(data);
    } else {
      copy_.resize(n);
      to_f32(data, dtype, copy_.data(), n);
      data_ = copy_.data();
    }
  }
  const float* data() const { return data_; }

 private:
  std::vector<float> copy_;
  const float* data_ = nullptr;
};

}  // namespace dattn
