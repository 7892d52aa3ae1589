// cast, linear_combination and guidance_combine on CUDA equal the CPU kernels bit for bit (the same
// roundings, no fused multiply-adds), on fresh random inputs, with a poisoned device heap.
#include <gtest/gtest.h>

#include "dattn/ops/combine.h"
#include "ops/cuda_test_util.h"

namespace dattn::testing {
namespace {

TEST(OpsCudaCombine, EqualsTheCpuKernelsBitForBit) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const Shape shape{48, 3, 1001};
  auto a = random_tensor(shape, DType::F32, rng), b = random_tensor(shape, DType::F32, rng);
  const Tensor c = ops::cast(random_tensor(shape, DType::F32, rng).t, DType::F64);
  poison_device_heap();
  for (DType out : {DType::F32, DType::F64}) {
    const std::vector<ops::ScaledTensor> cpu_terms{{0.3, a.t}, {-1.7e-2, b.t}, {2.0, c}};
    const std::vector<ops::ScaledTensor> gpu_terms{{0.3, dev(a.t)}, {-1.7e-2, dev(b.t)}, {2.0, dev(c)}};
    const Tensor gpu = ops::linear_combination(gpu_terms, out);
    check_device("linear_combination");
    EXPECT_EQ(gpu.device(), Device::CUDA);
    EXPECT_EQ(gpu.to_f64_vector(), ops::linear_combination(cpu_terms, out).to_f64_vector());
  }
  const Tensor g = ops::guidance_combine(dev(a.t), dev(b.t), 5.0f);
  check_device("guidance_combine");
  EXPECT_EQ(g.to_f32_vector(), ops::guidance_combine(a.t, b.t, 5.0f).to_f32_vector());
  EXPECT_EQ(ops::cast(dev(c), DType::F32).to_f32_vector(), ops::cast(c, DType::F32).to_f32_vector());
}

}  // namespace
}  // namespace dattn::testing
