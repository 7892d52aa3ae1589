#pragma once
// Helpers for the CUDA op tests (test_*_cuda.cc): each test runs an op on device copies of random host
// inputs and compares the result with a float64 reference (error budget per dtype) and with the CPU op
// on the same inputs. Tests skip (GTEST_SKIP) when this build has no CUDA or no device is visible, so
// CI without a GPU stays green; on the GPU machine every one of them runs.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/core/device_memory.h"
#include "ops/op_test_util.h"
#include "support/device_case.h"

namespace dattn::testing {

// Fills `bytes` of device memory with 0xFF (a NaN in fp32, bf16 and fp16) and frees it: the ops allocate
// their outputs themselves, and cudaMalloc hands recently freed memory out again, so an element a kernel
// forgets to write reads as NaN and fails the NaN check instead of passing with stale zeros.
inline void poison_device_heap(std::size_t bytes = std::size_t{64} << 20) {
  DeviceBuffer b(bytes);
  b.fill(0xFF);
  device_synchronize();
}

inline Tensor dev(const Tensor& t) { return t.defined() ? t.to(Device::CUDA) : Tensor(); }

// A device copy of `t` whose data starts 2 bytes past an aligned address (a view into a larger buffer),
// so the ops must take their scalar (unvectorised) paths.
inline Tensor dev_misaligned(const Tensor& t) {
  Tensor big = Tensor::empty({t.numel() + 1}, t.dtype(), Device::CUDA);
  Tensor view = big.narrow0(1, t.numel()).reshape(t.shape());  // one element (2 or 4 bytes) in
  view.copy_from(t);
  return view;
}

// Error budgets. Against float64: one rounding to the dtype (fp32: a few ulp; GEMMs sum in another
// order than the reference, ~1e-7 sqrt(K), hence `gemm`). Against the CPU op: both round the same
// float32 values, so 16-bit results differ by at most one unit in a few elements.
inline double limit_f64(DType dt, bool gemm = false) {
  switch (dt) {
    case DType::BF16: return 4e-3;
    case DType::F16: return 1e-3;
    default: return gemm ? 1e-5 : 2e-6;
  }
}
inline double limit_cpu(DType dt, bool gemm = false) {
  switch (dt) {
    case DType::BF16: return 4e-3;
    case DType::F16: return 1e-3;
    default: return gemm ? 1e-5 : 1e-6;
  }
}

// "" when `gpu` (the op's CUDA result) is a CUDA tensor of cpu's shape and dtype, has no NaN/Inf, and is
// within the limits of `ref` (float64) and of `cpu` (the CPU op's result); else what failed. Waits for
// the device first, so a faulting kernel is reported here.
inline std::string check_cuda(const Tensor& gpu, const Tensor& cpu, const std::vector<double>& ref, bool gemm = false) {
  check_device("cuda op under test");
  if (gpu.device() != Device::CUDA) return "result on " + std::string(device_name(gpu.device())) + ", expected cuda";
  if (gpu.shape() != cpu.shape() || gpu.dtype() != cpu.dtype())
    return "result " + gpu.describe() + ", the CPU op gave " + cpu.describe();
  const DType dt = gpu.dtype();
  std::string e = check_against(gpu, ref, limit_f64(dt, gemm));
  if (!e.empty()) return "vs float64: " + e;
  e = check_against(gpu, cpu.to_f64_vector(), limit_cpu(dt, gemm));
  if (!e.empty()) return "vs the CPU op: " + e;
  return "";
}

inline std::string trace(DType dt, std::uint64_t seed, const std::string& what = "") {
  return std::string(dtype_name(dt)) + (what.empty() ? "" : " " + what) + " seed " + std::to_string(seed);
}

}  // namespace dattn::testing
