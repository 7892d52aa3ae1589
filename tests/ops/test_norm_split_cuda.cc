// The split RMS norm on CUDA (norm_split.h: tensor parallel's q/k norm across heads held by several ranks):
// sum_squares against float64 and the CPU op; each part of a row normalised with the whole row's sums (the
// two parts' sums added, as the ranks' all-reduce does) against rms_norm of the whole row in float64 and
// against the CPU op; the rotary form likewise. Every dtype, with and without gains, part widths that are
// not multiples of 8 or 32, and unaligned views.
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/ops/norm_split.h"
#include "ops/cuda_test_util.h"
#include "ops/norm_rope_ref.h"

namespace dattn::testing {
namespace {

// [rows] float64 on the host from double values.
Tensor f64_tensor(const std::vector<double>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::F64);
  for (std::size_t i = 0; i < v.size(); ++i) t.data_as<double>()[i] = v[i];
  return t;
}

// Row r of `a` [rows, na] then row r of `b` [rows, nb]: the whole rows the two parts come from.
std::vector<double> join_rows(const std::vector<double>& a, std::int64_t na, const std::vector<double>& b,
                              std::int64_t nb) {
  std::vector<double> out;
  const std::size_t rows = a.size() / na;
  for (std::size_t r = 0; r < rows; ++r) {
    out.insert(out.end(), a.begin() + r * na, a.begin() + (r + 1) * na);
    out.insert(out.end(), b.begin() + r * nb, b.begin() + (r + 1) * nb);
  }
  return out;
}

// The columns [c0, c0 + n) of each row of `whole` [rows, width].
std::vector<double> part_of(const std::vector<double>& whole, std::int64_t width, std::int64_t c0, std::int64_t n) {
  std::vector<double> out;
  for (std::size_t r = 0; r < whole.size() / width; ++r)
    out.insert(out.end(), whole.begin() + r * width + c0, whole.begin() + r * width + c0 + n);
  return out;
}

std::vector<double> sums_ref(const std::vector<double>& x, std::int64_t n) {
  std::vector<double> s(x.size() / n, 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) s[i / n] += x[i] * x[i];
  return s;
}

TEST(OpsCudaNormSplit, SumSquaresMatchesFloat64AndTheCpu) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (std::int64_t n : {1, 37, 128, 1536})
    for (DType dt : kFloatDTypes)
      for (bool misaligned : {false, true}) {
        SCOPED_TRACE(trace(dt, seed, "N " + std::to_string(n) + (misaligned ? " misaligned" : "")));
        auto x = random_tensor({2, 9, 3, n}, dt, rng, 0.5f, 2.0f);
        poison_device_heap();
        const Tensor gpu = ops::sum_squares(misaligned ? dev_misaligned(x.t) : dev(x.t));
        check_device("sum_squares");
        ASSERT_EQ(gpu.shape(), (Shape{2, 9, 3}));
        ASSERT_EQ(gpu.dtype(), DType::F64);
        const std::vector<double> got = gpu.to_f64_vector(), ref = sums_ref(x.v, n),
                                  cpu = ops::sum_squares(x.t).to_f64_vector();
        for (std::size_t r = 0; r < ref.size(); ++r) {
          EXPECT_NEAR(got[r], ref[r], 1e-12 * ref[r]) << "row " << r;
          EXPECT_NEAR(got[r], cpu[r], 1e-12 * ref[r]) << "row " << r;
        }
      }
}

// A row of width na + nb split into two parts; each normalised with the sum of both parts' sums.
TEST(OpsCudaNormSplit, EachPartNormalisedWithTheWholeRowsSums) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  struct Split {
    std::int64_t na, nb;
  };
  for (const Split sp : {Split{768, 768}, Split{13, 29}, Split{1, 1}})
    for (bool gains : {true, false})
      for (DType dt : kFloatDTypes) {
        SCOPED_TRACE(trace(dt, seed, std::to_string(sp.na) + " + " + std::to_string(sp.nb) + (gains ? " gains" : "")));
        const std::int64_t rows = 40, width = sp.na + sp.nb;
        auto a = random_tensor({2, rows / 2, sp.na}, dt, rng, 1.0f, 1.5f);
        auto b = random_tensor({2, rows / 2, sp.nb}, dt, rng, -0.5f, 1.0f);
        auto wa = random_tensor({sp.na}, dt, rng, 1.0f, 0.2f), wb = random_tensor({sp.nb}, dt, rng, 1.0f, 0.2f);
        const std::vector<double> whole = join_rows(a.v, sp.na, b.v, sp.nb);
        const std::vector<double> w = join_rows(wa.v, sp.na, wb.v, sp.nb);
        std::vector<double> ref(whole.size());
        for (std::int64_t r = 0; r < rows; ++r) {
          double sq = 0;
          for (std::int64_t i = 0; i < width; ++i) sq += whole[r * width + i] * whole[r * width + i];
          const double inv = 1.0 / std::sqrt(sq / width + 1e-6);
          for (std::int64_t i = 0; i < width; ++i) ref[r * width + i] = whole[r * width + i] * inv * (gains ? w[i] : 1.0);
        }
        // The all-reduce's sum of the two parts' sums, on the device.
        const std::vector<double> sa = ops::sum_squares(dev(a.t)).to_f64_vector(),
                                  sb = ops::sum_squares(dev(b.t)).to_f64_vector();
        std::vector<double> total(sa.size());
        for (std::size_t r = 0; r < total.size(); ++r) total[r] = sa[r] + sb[r];
        const Tensor sums = f64_tensor(total, {2, rows / 2});
        for (bool misaligned : {false, true}) {
          SCOPED_TRACE(misaligned ? "misaligned" : "aligned");
          const auto to_dev = [&](const Tensor& t) { return misaligned ? dev_misaligned(t) : dev(t); };
          poison_device_heap();
          const Tensor ga = gains ? to_dev(wa.t) : Tensor(), gb = gains ? to_dev(wb.t) : Tensor();
          const Tensor ca = gains ? wa.t : Tensor(), cb = gains ? wb.t : Tensor();
          EXPECT_EQ(check_cuda(ops::rms_norm_with_sums(to_dev(a.t), dev(sums), width, 1e-6f, ga),
                               ops::rms_norm_with_sums(a.t, sums, width, 1e-6f, ca), part_of(ref, width, 0, sp.na)),
                    "");
          EXPECT_EQ(check_cuda(ops::rms_norm_with_sums(to_dev(b.t), dev(sums), width, 1e-6f, gb),
                               ops::rms_norm_with_sums(b.t, sums, width, 1e-6f, cb), part_of(ref, width, sp.na, sp.nb)),
                    "");
        }
      }
}

// Wan's tensor-parallel q/k: a row of 2 x 128 columns across heads, each rank holding 128 (two rotary runs
// of 64), normalised with the whole row's sums and rotated per run.
TEST(OpsCudaNormSplit, RotaryFormOfEachPartIsThatOfTheWholeRow) {
  DATTN_SKIP_WITHOUT_CUDA();
  const auto seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const std::int64_t s = 9, part = 128, dr = 64, width = 2 * part;
  for (DType dt : kFloatDTypes) {
    SCOPED_TRACE(trace(dt, seed));
    auto a = random_tensor({2, s, 1, part}, dt, rng, 0.3f, 2.0f), b = random_tensor({2, s, 1, part}, dt, rng);
    auto wa = random_tensor({part}, dt, rng, 1.0f, 0.1f), wb = random_tensor({part}, dt, rng, 1.0f, 0.1f);
    auto c = random_tensor({s, dr}, DType::F32, rng), sn = random_tensor({s, dr}, DType::F32, rng);
    const std::vector<double> whole = join_rows(a.v, part, b.v, part), w = join_rows(wa.v, part, wb.v, part);
    const std::vector<double> ref = norm_rope_ref(whole, s, 1, width, 1e-6, w.data(), c.v, sn.v, dr);
    const std::vector<double> sa = sums_ref(a.v, part), sb = sums_ref(b.v, part);
    std::vector<double> total(sa.size());
    for (std::size_t r = 0; r < total.size(); ++r) total[r] = sa[r] + sb[r];
    const Tensor sums = f64_tensor(total, {2, s, 1});
    poison_device_heap();
    EXPECT_EQ(check_cuda(ops::rms_norm_rope_interleaved_with_sums(dev(a.t), dev(sums), width, 1e-6f, dev(wa.t), dev(c.t),
                                                                  dev(sn.t)),
                         ops::rms_norm_rope_interleaved_with_sums(a.t, sums, width, 1e-6f, wa.t, c.t, sn.t),
                         part_of(ref, width, 0, part)),
              "");
    EXPECT_EQ(check_cuda(ops::rms_norm_rope_interleaved_with_sums(dev(b.t), dev(sums), width, 1e-6f, dev(wb.t), dev(c.t),
                                                                  dev(sn.t)),
                         ops::rms_norm_rope_interleaved_with_sums(b.t, sums, width, 1e-6f, wb.t, c.t, sn.t),
                         part_of(ref, width, part, part)),
              "");
  }
}

}  // namespace
}  // namespace dattn::testing
