#pragma once
// Helpers for the op tests: random tensors whose values are exact in their dtype (so the float64
// reference sees the very numbers the op sees), and the comparison every op output gets: NaN/Inf first,
// then relative L2 against the float64 reference.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/attention/metrics.h"
#include "dattn/core/error.h"
#include "dattn/core/tensor.h"
#include "support/attention_cases.h"

namespace dattn::testing {

// A host tensor of N(mean, stddev) values rounded to `dtype`, and those values as doubles.
struct RandomTensor {
  Tensor t;
  std::vector<double> v;
};

inline RandomTensor random_tensor(const Shape& shape, DType dtype, std::mt19937_64& rng, float mean = 0.0f,
                                  float stddev = 1.0f) {
  const auto values = test::gaussian(static_cast<std::size_t>(shape_numel(shape)), rng, mean, stddev);
  RandomTensor r;
  r.t = Tensor::from_f32(values, shape, dtype);
  r.v = r.t.to_f64_vector();
  return r;
}

// Error budget of an op whose result is rounded once to `dtype` after float32 arithmetic.
inline double rounding_limit(DType dtype) {
  switch (dtype) {
    case DType::BF16: return 8e-3;  // one bf16 rounding: 2^-9 relative per element, ~2^-10 in L2
    case DType::F16: return 1e-3;   // one fp16 rounding: 2^-12 relative per element
    default: return 2e-6;           // float32 arithmetic: a few ulp per element
  }
}

// "" when `got` is finite and within `limit` (rel L2) of `ref`; otherwise what failed.
inline std::string check_against(const Tensor& got, const std::vector<double>& ref, double limit,
                                 ErrorStats* out = nullptr) {
  const std::vector<double> g = got.to_f64_vector();
  if (g.size() != ref.size())
    return "size " + std::to_string(g.size()) + " vs reference " + std::to_string(ref.size());
  const ErrorStats s = compare(g.data(), ref.data(), g.size());
  if (out) *out = s;
  if (s.nonfinite) return std::to_string(s.nonfinite) + " NaN/Inf values";
  if (!(s.rel_l2 <= limit)) return "rel_l2 " + std::to_string(s.rel_l2) + " > " + std::to_string(limit);
  return "";
}

// The message of the UserError `f` throws ("" and a test failure when it throws nothing or another type).
template <class F>
std::string user_error(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected UserError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected UserError, nothing was thrown";
  return {};
}

inline const DType kFloatDTypes[] = {DType::F32, DType::BF16, DType::F16};

}  // namespace dattn::testing
