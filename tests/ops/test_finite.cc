// count_nonfinite on the CPU and on CUDA (skipped without a GPU): NaN, +Inf and -Inf counted in every
// float dtype, finite extremes (max, denormals, -0) not; CUDA equals the CPU on the same tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "dattn/ops/finite.h"
#include "ops/cuda_test_util.h"

namespace dattn::testing {
namespace {

// 10000 finite values with NaN at 17 and 9000, +Inf at 4096, -Inf at 9999; the largest finite value,
// a denormal and -0 besides.
std::vector<double> poisoned() {
  std::vector<double> v(10000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i)) * 3.0;
  v[17] = v[9000] = std::numeric_limits<double>::quiet_NaN();
  v[4096] = std::numeric_limits<double>::infinity();
  v[9999] = -std::numeric_limits<double>::infinity();
  v[5] = 65504.0;  // fp16's largest finite value (bf16 and fp32 hold it too)
  v[6] = 1e-40;
  v[7] = -0.0;
  return v;
}

TEST(OpsFinite, CountsNanAndInfInEveryFloatDtype) {
  for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    const Tensor t = Tensor::from_f64(poisoned(), {100, 100}, dt);
    const ops::NonFinite n = ops::count_nonfinite(t);
    EXPECT_EQ(n.count, 4) << dtype_name(dt);
    EXPECT_EQ(n.nan, 2) << dtype_name(dt);
    const ops::NonFinite clean = ops::count_nonfinite(Tensor::zeros({3, 5}, dt));
    EXPECT_EQ(clean.count, 0) << dtype_name(dt);
  }
  EXPECT_EQ(ops::count_nonfinite(Tensor::zeros({0}, DType::F32)).count, 0);
  EXPECT_THROW(ops::count_nonfinite(Tensor::zeros({3}, DType::I8)), UserError);
}

TEST(OpsFiniteCuda, EqualsTheCpuCount) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    const Tensor t = Tensor::from_f64(poisoned(), {100, 100}, dt);
    const ops::NonFinite n = ops::count_nonfinite(dev(t));
    EXPECT_EQ(n.count, 4) << dtype_name(dt);
    EXPECT_EQ(n.nan, 2) << dtype_name(dt);
    EXPECT_EQ(ops::count_nonfinite(dev(Tensor::zeros({3, 5}, dt))).count, 0) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace dattn::testing
