// mean_rows against a float64 reference: ragged counts per batch item, rows past the count ignored
// (even when they hold NaN), every dtype; CUDA against the same reference when a GPU is present.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "dattn/ops/reduce.h"
#include "ops/cuda_test_util.h"
#include "ops/op_test_util.h"

namespace dattn::testing {
namespace {

std::vector<double> mean_rows_ref(const std::vector<double>& x, std::int64_t n, std::int64_t d,
                                  const std::vector<std::int64_t>& counts) {
  std::vector<double> y(counts.size() * static_cast<std::size_t>(d), 0.0);
  for (std::size_t b = 0; b < counts.size(); ++b)
    for (std::int64_t c = 0; c < d; ++c) {
      double s = 0;
      for (std::int64_t r = 0; r < counts[b]; ++r) s += x[(b * n + r) * d + c];
      y[b * d + c] = s / static_cast<double>(counts[b]);
    }
  return y;
}

// Rows past each count become NaN: the op must not read them.
RandomTensor with_nan_padding(RandomTensor x, std::int64_t n, std::int64_t d, const std::vector<std::int64_t>& counts) {
  std::vector<float> v(x.v.begin(), x.v.end());
  for (std::size_t b = 0; b < counts.size(); ++b)
    for (std::int64_t r = counts[b]; r < n; ++r)
      for (std::int64_t c = 0; c < d; ++c) v[(b * n + r) * d + c] = std::numeric_limits<float>::quiet_NaN();
  x.t = Tensor::from_f32(v, x.t.shape(), x.t.dtype());
  return x;
}

TEST(OpsReduce, MeanRowsMatchesFloat64WithRaggedCounts) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::int64_t n = 37, d = 300;
  const std::vector<std::int64_t> counts = {37, 1, 20};
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed));
    RandomTensor x = with_nan_padding(random_tensor({3, n, d}, dt, rng, 0.5f, 2.0f), n, d, counts);
    const auto ref = mean_rows_ref(x.v, n, d, counts);
    const Tensor y = ops::mean_rows(x.t, counts);
    EXPECT_EQ(y.dtype(), DType::F32);
    EXPECT_EQ(y.shape(), (Shape{3, d}));
    EXPECT_EQ(check_against(y, ref, 1e-6), "");
    if (test::cuda_unavailable_reason().empty()) {
      poison_device_heap();
      EXPECT_EQ(check_against(ops::mean_rows(dev(x.t), counts), ref, 1e-6), "");
    }
  }
}

TEST(OpsReduce, MeanRowsRefusesBadCounts) {
  const Tensor x = Tensor::zeros({2, 4, 8}, DType::F32);
  EXPECT_NE(user_error([&] { ops::mean_rows(x, {1}); }).find("one per batch item"), std::string::npos);
  EXPECT_NE(user_error([&] { ops::mean_rows(x, {1, 0}); }).find("count 0"), std::string::npos);
  EXPECT_NE(user_error([&] { ops::mean_rows(x, {5, 1}); }).find("count 5"), std::string::npos);
  EXPECT_NE(user_error([&] { ops::mean_rows(Tensor::zeros({4, 8}, DType::F32), {1}); }).find("mean_rows"),
            std::string::npos);
}

}  // namespace
}  // namespace dattn::testing
