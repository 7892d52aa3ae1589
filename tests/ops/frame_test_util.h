#pragma once
// Helpers for the tests of the channels-last frame ops (conv, frames, normalize_channels, softmax): a
// device each test runs on (CUDA in a run context of its own whose every allocation is NaN-filled, so
// an element a kernel fails to write shows as NaN), random host tensors, and relative L2 against a
// float64 reference with NaN/Inf counted first.
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/core/run_context.h"
#include "dattn/core/tensor.h"
#include "support/device_case.h"

namespace dattn::testing {

// Binds a poisoning CUDA context for its lifetime (nothing on the CPU).
class FrameOpDevice {
 public:
  explicit FrameOpDevice(Device device) : device_(device) {
    if (device != Device::CUDA) return;
    context_ = RunContext::create(Device::CUDA, 0);
    context_->set_poison_new_memory(true);
    scope_ = std::make_unique<ContextScope>(*context_);
  }
  ~FrameOpDevice() {
    scope_.reset();
    context_.reset();
  }
  Device device() const { return device_; }
  Tensor put(const Tensor& host) const { return host.defined() ? host.to(device_) : host; }

 private:
  Device device_;
  std::shared_ptr<RunContext> context_;
  std::unique_ptr<ContextScope> scope_;
};

inline Tensor random_f32(const Shape& shape, std::mt19937& rng, float stddev = 1.0f) {
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (float& x : v) x = normal(rng);
  return Tensor::from_f32(v, shape);
}

// "" when `got` has ref's element count, no NaN/Inf and relative L2 <= limit; else what failed.
inline std::string compare_f64(const Tensor& got, const std::vector<double>& ref, double limit) {
  const std::vector<double> g = got.to_f64_vector();
  if (g.size() != ref.size()) return "got " + std::to_string(g.size()) + " values, expected " + std::to_string(ref.size());
  double err2 = 0, ref2 = 0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!std::isfinite(g[i])) {
      ++bad;
      continue;
    }
    err2 += (g[i] - ref[i]) * (g[i] - ref[i]);
    ref2 += ref[i] * ref[i];
  }
  if (bad) return std::to_string(bad) + " NaN/Inf values";
  const double rel = std::sqrt(err2 / (ref2 > 0 ? ref2 : 1.0));
  if (rel > limit) return "relative L2 " + std::to_string(rel) + " above " + std::to_string(limit);
  return "";
}

// The devices a frame-op test runs on here: the CPU, and CUDA when a device is visible.
inline std::vector<Device> frame_op_devices() {
  std::vector<Device> d = {Device::CPU};
  if (test::cuda_unavailable_reason().empty()) d.push_back(Device::CUDA);
  return d;
}

}  // namespace dattn::testing
