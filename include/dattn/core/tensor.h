#pragma once
// A dense, contiguous, row-major tensor on one device. Copies share storage (a tensor is a cheap
// handle); clone() copies the data. Models, ops and loaders pass tensors; kernels take raw pointers.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dattn/core/device.h"
#include "dattn/core/dtype.h"

namespace dattn {

using Shape = std::vector<std::int64_t>;

// The element count, overflow-checked: UserError for a negative dimension or a count past 2^63.
std::int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[1,8,3,8,12]"

class Tensor {
 public:
  Tensor() = default;

  // Uninitialised memory (host memory is 64-byte aligned; CUDA memory from cudaMalloc).
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::CPU);
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::CPU);
  // A host tensor holding `values` converted (round to nearest even) to `dtype`.
  static Tensor from_f32(const std::vector<float>& values, const Shape& shape, DType dtype = DType::F32);
  static Tensor from_f64(const std::vector<double>& values, const Shape& shape, DType dtype = DType::F32);
  // A host tensor that views memory it does not own (e.g. an mmapped file). `keep_alive` is held
  // for as long as any view exists.
  static Tensor wrap_host(const void* data, const Shape& shape, DType dtype,
                          std::shared_ptr<const void> keep_alive = nullptr);

  bool defined() const { return static_cast<bool>(storage_); }
  const Shape& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  // Size of dimension i; negative i counts from the end. Throws std::out_of_range.
  std::int64_t dim(int i) const;
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t bytes() const;  // numel() x the element size, overflow-checked
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

  void* data();
  const void* data() const;
  // Typed host/device pointer; throws when sizeof(T) differs from the dtype's element size.
  template <class T>
  T* data_as() {
    check_element_size(sizeof(T));
    return static_cast<T*>(data());
  }
  template <class T>
  const T* data_as() const {
    check_element_size(sizeof(T));
    return static_cast<const T*>(data());
  }

  // Same storage, new shape; one dimension may be -1. Throws UserError when numel differs.
  Tensor reshape(const Shape& shape) const;
  // Rows [start, start+length) of dimension 0, sharing storage.
  Tensor narrow0(std::int64_t start, std::int64_t length) const;
  // A copy on `device` (same dtype); the same tensor when already there.
  Tensor to(Device device) const;
  // A copy converted to `dtype` on the same device (CPU; CUDA tensors go through the host).
  Tensor to(DType dtype) const;
  Tensor clone() const;
  // Values as float / double on the host, whatever the dtype and device.
  std::vector<float> to_f32_vector() const;
  std::vector<double> to_f64_vector() const;
  // Copies `src` (same shape and dtype, any device) into this tensor's memory. A copy between two CUDA
  // tensors of the current context is queued on its stream (later work there sees it); any other copy
  // has finished on return.
  void copy_from(const Tensor& src);

  // "[1,8,3,8,12] bf16 cuda" for messages.
  std::string describe() const;

 private:
  struct Storage;
  void check_element_size(std::size_t size) const;

  std::shared_ptr<Storage> storage_;
  std::size_t offset_ = 0;  // bytes into the storage
  Shape shape_;
  DType dtype_ = DType::F32;
  Device device_ = Device::CPU;
};

}  // namespace dattn
