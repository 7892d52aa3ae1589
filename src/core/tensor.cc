#include "dattn/core/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "dattn/core/checked_math.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/error.h"
#include "dattn/core/human_bytes.h"
#include "dattn/core/process_memory.h"
#include "dattn/core/stage_timer.h"
#include "dattn/core/upload.h"

namespace dattn {

std::int64_t shape_numel(const Shape& shape) {
  for (auto d : shape)
    if (d < 0) throw UserError("tensor shape " + shape_str(shape) + " has a negative dimension");
  if (const auto n = product_if_fits(shape)) return *n;
  throw UserError("tensor shape " + shape_str(shape) + " has more than 2^63 elements (the size overflows)");
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  s += ']';
  return s;
}

// Host memory is owned (aligned malloc) or borrowed (kept alive by `keep_alive`); device memory is a
// DeviceBuffer.
struct Tensor::Storage {
  void* host = nullptr;
  bool owns_host = false;
  std::shared_ptr<const void> keep_alive;
  DeviceBuffer device;
  ~Storage() {
    if (owns_host) std::free(host);
  }
  void* ptr() { return host ? host : device.get(); }
};

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (auto d : shape)
    if (d < 0) throw UserError("tensor shape " + shape_str(shape) + " has a negative dimension");
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  t.storage_ = std::make_shared<Storage>();
  const std::size_t bytes = t.bytes();
  if (device == Device::CPU) {
    const std::size_t rounded = static_cast<std::size_t>(
        checked_add(static_cast<std::int64_t>(bytes), 63, "tensor size") / 64 * 64);
    t.storage_->host = std::aligned_alloc(64, rounded ? rounded : 64);
    if (!t.storage_->host)
      throw UserError("out of host memory: a tensor " + t.describe() + " needs " +
                      human_bytes(static_cast<std::int64_t>(rounded)) + ", " +
                      human_bytes(std::max<std::int64_t>(0, host_memory_available_bytes())) + " available");
    t.storage_->owns_host = true;
  } else {
    t.storage_->device = DeviceBuffer(bytes ? bytes : 1);
  }
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (device == Device::CPU)
    std::memset(t.data(), 0, t.bytes());
  else
    t.storage_->device.fill(0);  // stream-ordered before any later work of the current context
  return t;
}

Tensor Tensor::from_f32(const std::vector<float>& values, const Shape& shape, DType dtype) {
  if (static_cast<std::int64_t>(values.size()) != shape_numel(shape))
    throw UserError("Tensor::from_f32: " + std::to_string(values.size()) + " values for shape " +
                    shape_str(shape));
  Tensor t = empty(shape, dtype);
  dattn::from_f32(values.data(), dtype, t.data(), values.size());
  return t;
}

Tensor Tensor::from_f64(const std::vector<double>& values, const Shape& shape, DType dtype) {
  if (static_cast<std::int64_t>(values.size()) != shape_numel(shape))
    throw UserError("Tensor::from_f64: " + std::to_string(values.size()) + " values for shape " +
                    shape_str(shape));
  Tensor t = empty(shape, dtype);
  dattn::from_f64(values.data(), dtype, t.data(), values.size());
  return t;
}

Tensor Tensor::wrap_host(const void* data, const Shape& shape, DType dtype,
                         std::shared_ptr<const void> keep_alive) {
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = Device::CPU;
  t.storage_ = std::make_shared<Storage>();
  t.storage_->host = const_cast<void*>(data);
  t.storage_->keep_alive = std::move(keep_alive);
  return t;
}

std::size_t Tensor::bytes() const {
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(numel(), static_cast<std::int64_t>(dtype_size(dtype_)), &bytes))
    throw UserError("tensor " + describe() + " has more than 2^63 bytes (the size overflows)");
  return static_cast<std::size_t>(bytes);
}

std::int64_t Tensor::dim(int i) const {
  int n = ndim();
  if (i < -n || i >= n) throw std::out_of_range("Tensor::dim(" + std::to_string(i) + ") of " + describe());
  return shape_[i < 0 ? i + n : i];
}

void* Tensor::data() {
  if (!storage_) throw std::logic_error("data() of an undefined tensor");
  return static_cast<char*>(storage_->ptr()) + offset_;
}

const void* Tensor::data() const { return const_cast<Tensor*>(this)->data(); }

void Tensor::check_element_size(std::size_t size) const {
  if (size != dtype_size(dtype_))
    throw std::logic_error("Tensor::data_as: element size " + std::to_string(size) + " for " + describe());
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape s = shape;
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw UserError("reshape " + shape_str(shape) + ": more than one -1");
      infer = static_cast<int>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) s[infer] = known ? numel() / known : 0;
  if (shape_numel(s) != numel())
    throw UserError("cannot reshape " + describe() + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = s;
  return t;
}

Tensor Tensor::narrow0(std::int64_t start, std::int64_t length) const {
  if (ndim() == 0 || start < 0 || length < 0 || start + length > shape_[0])
    throw UserError("narrow0(" + std::to_string(start) + ", " + std::to_string(length) + ") of " +
                    describe());
  Tensor t = *this;
  t.shape_[0] = length;
  t.offset_ += static_cast<std::size_t>(start * (numel() / (shape_[0] ? shape_[0] : 1))) *
               dtype_size(dtype_);
  return t;
}

Tensor Tensor::to(Device device) const {
  if (device == device_) return *this;
  Tensor t = empty(shape_, dtype_, device);
  if (device_ == Device::CUDA) storage_->device.wait_for_owner();  // made under another context
  const StageScope timed(device == Device::CPU ? "copy to host" : "copy to device");
  // On the current context's stream, finished on return. Large downloads go through the pinned ring:
  // one pageable cudaMemcpy faults the destination's pages in on one thread (~1.5 GB/s on the H200 host).
  if (device == Device::CPU && bytes() >= kDownloadThroughRingBytes)
    download_bytes(t.data(), data(), bytes());
  else
    copy_bytes(t.data(), data(), bytes());
  return t;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  if (device_ != Device::CPU) return to(Device::CPU).to(dtype).to(device_);
  Tensor t = empty(shape_, dtype);
  std::vector<float> tmp(static_cast<std::size_t>(numel()));
  if (dtype_ == DType::F64 || dtype == DType::F64) {
    std::vector<double> v = to_f64_vector();
    dattn::from_f64(v.data(), dtype, t.data(), v.size());
  } else {
    to_f32(data(), dtype_, tmp.data(), tmp.size());
    dattn::from_f32(tmp.data(), dtype, t.data(), tmp.size());
  }
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_, device_);
  t.copy_from(*this);
  return t;
}

std::vector<float> Tensor::to_f32_vector() const {
  Tensor host = to(Device::CPU);
  std::vector<float> v(static_cast<std::size_t>(numel()));
  dattn::to_f32(host.data(), dtype_, v.data(), v.size());
  return v;
}

std::vector<double> Tensor::to_f64_vector() const {
  Tensor host = to(Device::CPU);
  std::vector<double> v(static_cast<std::size_t>(numel()));
  dattn::to_f64(host.data(), dtype_, v.data(), v.size());
  return v;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.shape_ != shape_ || src.dtype_ != dtype_)
    throw UserError("copy_from: source " + src.describe() + " does not match " + describe());
  if (device_ == Device::CPU && src.device_ == Device::CPU)
    std::memcpy(data(), src.data(), bytes());
  else if (device_ == Device::CUDA && src.device_ == Device::CUDA && storage_->device.on_current_stream() &&
           src.storage_->device.on_current_stream())
    copy_device_bytes_async(data(), src.data(), bytes());  // stream-ordered with all their other work
  else {
    // Either side may belong to another context's stream: let its queued work finish first.
    if (device_ == Device::CUDA) storage_->device.wait_for_owner();
    if (src.device_ == Device::CUDA) src.storage_->device.wait_for_owner();
    // A large download as to(Device::CPU) makes it: host threads fault the pageable pages in, not the driver's one.
    if (device_ == Device::CPU && src.device_ == Device::CUDA && bytes() >= kDownloadThroughRingBytes)
      download_bytes(data(), src.data(), bytes());
    else
      copy_bytes(data(), src.data(), bytes());
  }
}

std::string Tensor::describe() const {
  return shape_str(shape_) + " " + std::string(dtype_name(dtype_)) + " " +
         std::string(device_name(device_));
}

}  // namespace dattn
