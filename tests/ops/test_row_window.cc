// The RowWindow forms of linear, rms_norm and rms_norm_rope_interleaved (and copy_into) on the CPU and
// on CUDA: with two batch items, the window's rows hold what the tensor-returning form gives, and every
// other row keeps the sentinel it held before. On CUDA, linear writes per item straight into the window
// when the layout allows and takes the copy path otherwise (3 output features: rows off 16 bytes). The
// reverse, copy_from and linear of a window's rows, against the rows copied out.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/ops/linear.h"
#include "dattn/ops/norm.h"
#include "dattn/ops/row_window.h"
#include "ops/cuda_test_util.h"

namespace dattn::testing {
namespace {

constexpr float kSentinel = 7.0f;
constexpr std::int64_t kItems = 2, kRows = 5, kOutRows = 9, kRow = 3;

Tensor sentinel_window(Shape shape, DType dt, Device device) {
  shape[1] = kOutRows;
  return Tensor::from_f32(std::vector<float>(static_cast<std::size_t>(shape_numel(shape)), kSentinel), shape, dt)
      .to(device);
}

// "" when rows [kRow, kRow + kRows) of every item of `window` match `expected` [kItems, kRows, ...]
// (within `limit` relative L2) and every other row still holds the sentinel.
std::string check_window(const Tensor& window, const Tensor& expected, double limit) {
  const std::vector<double> w = window.to_f64_vector(), e = expected.to_f64_vector();
  const std::size_t row = e.size() / static_cast<std::size_t>(kItems * kRows);
  std::vector<double> inside;
  for (std::int64_t b = 0; b < kItems; ++b)
    for (std::int64_t r = 0; r < kOutRows; ++r)
      for (std::size_t i = 0; i < row; ++i) {
        const double v = w[(static_cast<std::size_t>(b * kOutRows + r)) * row + i];
        if (r >= kRow && r < kRow + kRows)
          inside.push_back(v);
        else if (v != kSentinel)
          return "item " + std::to_string(b) + " row " + std::to_string(r) + " outside the window was written";
      }
  const ErrorStats s = compare(inside.data(), e.data(), e.size());
  if (s.nonfinite) return std::to_string(s.nonfinite) + " NaN/Inf values in the window";
  if (!(s.rel_l2 <= limit)) return "window rel_l2 " + std::to_string(s.rel_l2) + " > " + std::to_string(limit);
  return "";
}

void check_every_op(Device device) {
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const auto on = [&](const Tensor& t) { return t.to(device); };
  for (DType dt : kFloatDTypes)
    for (std::int64_t features : {std::int64_t{24}, std::int64_t{3}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " features " + std::to_string(features) + " seed " +
                   std::to_string(seed));
      // The same device and dtype computes both forms: they may differ only by GEMM summation order.
      const double limit = dt == DType::F32 ? 1e-6 : limit_cpu(dt);
      auto x = random_tensor({kItems, kRows, 16}, dt, rng);
      auto w = random_tensor({features, 16}, dt, rng);
      auto bias = random_tensor({features}, dt, rng);
      Tensor out = sentinel_window({kItems, kRows, features}, dt, device);
      ops::linear(on(x.t), on(w.t), on(bias.t), {out, kRow});
      EXPECT_EQ(check_window(out, ops::linear(on(x.t), on(w.t), on(bias.t)), limit), "");

      auto h = random_tensor({kItems, kRows, 3, 16}, dt, rng, 0.5f, 2.0f);
      auto gain = random_tensor({16}, dt, rng, 1.0f, 0.1f);
      auto c = random_tensor({kRows, 16}, DType::F32, rng);
      auto sn = random_tensor({kRows, 16}, DType::F32, rng);
      Tensor norm_out = sentinel_window(h.t.shape(), dt, device);
      ops::rms_norm(on(h.t), 1e-6f, on(gain.t), {norm_out, kRow});
      EXPECT_EQ(check_window(norm_out, ops::rms_norm(on(h.t), 1e-6f, on(gain.t)), 0.0), "");
      Tensor rope_out = sentinel_window(h.t.shape(), dt, device);
      ops::rms_norm_rope_interleaved(on(h.t), 1e-6f, on(gain.t), on(c.t), on(sn.t), {rope_out, kRow});
      EXPECT_EQ(check_window(rope_out, ops::rms_norm_rope_interleaved(on(h.t), 1e-6f, on(gain.t), on(c.t), on(sn.t)), 0.0),
                "");
      Tensor copied = sentinel_window(h.t.shape(), dt, device);
      ops::copy_into(on(h.t), {copied, kRow});
      EXPECT_EQ(check_window(copied, h.t, 0.0), "");

      // The reverse direction: rows read from a window (copy_from, and linear reading them in place).
      auto big = random_tensor({kItems, kOutRows, 16}, dt, rng);
      const Tensor rows = ops::copy_from({on(big.t), kRow}, kRows);
      ASSERT_EQ(rows.shape(), (Shape{kItems, kRows, 16}));
      std::vector<double> expected;
      for (std::int64_t b = 0; b < kItems; ++b)
        for (std::int64_t r = kRow; r < kRow + kRows; ++r)
          for (std::int64_t i = 0; i < 16; ++i) expected.push_back(big.v[static_cast<std::size_t>((b * kOutRows + r) * 16 + i)]);
      EXPECT_EQ(rows.to_f64_vector(), expected);
      EXPECT_EQ(check_against(ops::linear({on(big.t), kRow}, kRows, on(w.t), on(bias.t)),
                              ops::linear(rows, on(w.t), on(bias.t)).to_f64_vector(), limit),
                "");
    }
}

TEST(OpsRowWindow, EveryOpWritesOnlyItsRowsOnTheCpu) { check_every_op(Device::CPU); }

TEST(OpsRowWindowCuda, EveryOpWritesOnlyItsRows) {
  DATTN_SKIP_WITHOUT_CUDA();
  check_every_op(Device::CUDA);
}

TEST(OpsRowWindow, WindowsThatDoNotFitAreRefused) {
  const Tensor x = Tensor::zeros({2, 5, 16}, DType::F32), w = Tensor::zeros({8, 16}, DType::F32);
  EXPECT_EQ(user_error([&] { ops::linear(x, w, Tensor(), {Tensor::zeros({2, 9, 8}, DType::F32), 5}); }),
            "linear: window row 5: the 5 rows must fit in window.out's 9");
  EXPECT_EQ(user_error([&] { ops::linear(x, w, Tensor(), {Tensor::zeros({2, 9, 8}, DType::F32), -1}); }),
            "linear: window row -1: the 5 rows must fit in window.out's 9");
  EXPECT_EQ(user_error([&] { ops::rms_norm(x, 1e-6f, Tensor(), {Tensor::zeros({1, 9, 16}, DType::F32), 0}); }),
            "rms_norm: window.out [1,9,16] fp32 cpu: expected fp32 on cpu, shaped [2,5,16] but for dimension 1");
  EXPECT_EQ(user_error([&] { ops::copy_into(x, {Tensor::zeros({2, 9, 16}, DType::BF16), 0}); }),
            "copy_into: window.out [2,9,16] bf16 cpu: expected fp32 on cpu, shaped [2,5,16] but for dimension 1");
  EXPECT_EQ(user_error([&] { ops::copy_into(x, {Tensor(), 0}); }),
            "copy_into: window.out is undefined; expected a tensor");
  EXPECT_EQ(user_error([&] { ops::linear({x, 3}, 3, w); }), "linear: rows [3, 6) must lie within x_rows.out [2,5,16] fp32 cpu");
  EXPECT_EQ(user_error([&] { ops::copy_from({x, -1}, 2); }), "copy_from: rows [-1, 1) must lie within window.out's 5");
}

}  // namespace
}  // namespace dattn::testing
