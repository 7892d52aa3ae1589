// Targeted tests of the CPU FLASH_ATTN, TORCH_SDPA and SPARSE_BLOCK code: each against a plain double
// loop written here, on fresh random inputs (the seed is printed on failure).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "attention/backends/backends.h"
#include "attention/backends/sparse_block/block_mask.h"
#include "dattn/core/device.h"
#include "dattn/attention/backend.h"
#include "dattn/core/error.h"

namespace dattn {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// One problem and its storage. q/k/v values are exact in the dtype (drawn in fp32, rounded once).
struct TestCase {
  AttentionShape shape;
  std::vector<float> q, k, v;
  std::vector<std::uint8_t> q_bytes, k_bytes, v_bytes, out;
  std::vector<std::int64_t> key_lengths;
  std::vector<std::uint8_t> key_mask;
  std::optional<GeneralMask> mask;

  AttentionProblem problem() {
    AttentionProblem p;
    p.shape = shape;
    p.q = q_bytes.data();
    p.k = k_bytes.data();
    p.v = v_bytes.data();
    p.out = out.data();
    p.key_lengths = key_lengths;
    p.key_mask = key_mask.empty() ? nullptr : key_mask.data();
    p.mask = mask;
    return p;
  }
  std::vector<double> output() const {
    std::vector<double> x(shape.batch * shape.seq_q * shape.heads_q * shape.head_dim);
    to_f64(out.data(), shape.dtype, x.data(), x.size());
    return x;
  }
  bool key_valid(std::int64_t b, std::int64_t j) const {
    if (!key_lengths.empty()) return j < key_lengths[b];
    return key_mask.empty() || key_mask[b * shape.seq_k + j] != 0;
  }
};

std::vector<float> random_exact(std::size_t n, DType t, std::mt19937& rng, std::vector<std::uint8_t>& bytes) {
  std::normal_distribution<float> normal;
  std::vector<float> x(n);
  for (float& e : x) e = normal(rng);
  bytes.resize(n * dtype_size(t));
  from_f32(x.data(), t, bytes.data(), n);
  to_f32(bytes.data(), t, x.data(), n);  // the values the backend sees
  return x;
}

TestCase make_case(AttentionShape shape, std::uint32_t seed) {
  std::mt19937 rng(seed);
  TestCase c;
  c.shape = shape;
  const std::int64_t B = shape.batch, D = shape.head_dim;
  c.q = random_exact(B * shape.seq_q * shape.heads_q * D, shape.dtype, rng, c.q_bytes);
  c.k = random_exact(B * shape.seq_k * shape.heads_kv * D, shape.dtype, rng, c.k_bytes);
  c.v = random_exact(B * shape.seq_k * shape.heads_kv * D, shape.dtype, rng, c.v_bytes);
  c.out.assign(B * shape.seq_q * shape.heads_q * D * dtype_size(shape.dtype), 0xFF);  // NaN poison
  return c;
}

// Exact attention in double; bias(b, h, i, j) is added to the scaled score (-inf hides the key).
using Bias = std::function<double(std::int64_t, std::int64_t, std::int64_t, std::int64_t)>;
std::vector<double> naive_attention(const TestCase& c, const Bias& bias = nullptr) {
  const AttentionShape& s = c.shape;
  const std::int64_t D = s.head_dim, group = s.heads_q / s.heads_kv;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> out(s.batch * s.seq_q * s.heads_q * D, 0.0), w(s.seq_k);
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads_q; ++h)
      for (std::int64_t i = 0; i < s.seq_q; ++i) {
        const float* q = c.q.data() + ((b * s.seq_q + i) * s.heads_q + h) * D;
        double mx = kNegInf;
        for (std::int64_t j = 0; j < s.seq_k; ++j) {
          const float* k = c.k.data() + ((b * s.seq_k + j) * s.heads_kv + h / group) * D;
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d) dot += double(q[d]) * k[d];
          w[j] = c.key_valid(b, j) ? dot * scale + (bias ? bias(b, h, i, j) : 0.0) : kNegInf;
          mx = std::max(mx, w[j]);
        }
        if (mx == kNegInf) continue;
        double sum = 0;
        for (double& x : w) sum += x = std::exp(x - mx);
        double* o = out.data() + ((b * s.seq_q + i) * s.heads_q + h) * D;
        for (std::int64_t j = 0; j < s.seq_k; ++j) {
          if (w[j] == 0) continue;
          const float* v = c.v.data() + ((b * s.seq_k + j) * s.heads_kv + h / group) * D;
          for (std::int64_t d = 0; d < D; ++d) o[d] += w[j] / sum * v[d];
        }
      }
  return out;
}

double rel_l2(const std::vector<double>& got, const std::vector<double>& ref) {
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    err += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(err / norm);
}

std::uint32_t fresh_seed() { return std::random_device{}(); }

AttentionShape shape_of(std::int64_t B, std::int64_t Sq, std::int64_t Sk, std::int64_t Hq, std::int64_t Hkv,
                        std::int64_t D, DType t = DType::F32) {
  return {B, Sq, Sk, Hq, Hkv, D, t, MaskKind::None};
}

// Runs `backend` on c and returns rel-L2 against the double loop (after NaN checks).
double run_and_compare(const AttentionBackend& backend, TestCase& c, const nlohmann::json& extra = {},
                       const Bias& bias = nullptr) {
  run_attention(backend, c.problem(), extra, Device::CPU);
  const std::vector<double> got = c.output();
  for (double x : got) EXPECT_TRUE(std::isfinite(x)) << backend.name() << " wrote a non-finite value";
  return rel_l2(got, naive_attention(c, bias));
}

TEST(CpuBackends, ExactBackendsMatchDoubleLoopOnOddShapes) {
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (std::int64_t D : {64, 128, 13}) {
    TestCase c = make_case(shape_of(2, 77, 131, 2, 2, D), seed);
    EXPECT_LT(run_and_compare(flash_attn_backend(), c), 1e-6) << "FLASH_ATTN D=" << D;
    EXPECT_LT(run_and_compare(torch_sdpa_backend(), c), 1e-6) << "TORCH_SDPA D=" << D;
  }
}

TEST(CpuBackends, GroupedQueryAttention) {
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TestCase c = make_case(shape_of(1, 70, 150, 4, 2, 64), seed);
  EXPECT_LT(run_and_compare(flash_attn_backend(), c), 1e-6);
  EXPECT_LT(run_and_compare(torch_sdpa_backend(), c), 1e-6);
}

TEST(CpuBackends, KeyPaddingLengthsAndMaskWithEmptyRows) {
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  AttentionShape shape = shape_of(3, 77, 131, 2, 1, 64);
  shape.mask = MaskKind::KeyPadding;
  TestCase by_length = make_case(shape, seed);
  by_length.key_lengths = {131, 0, 70};  // batch item 1 has no key at all
  TestCase by_mask = make_case(shape, seed);
  std::mt19937 rng(seed);
  by_mask.key_mask.resize(3 * 131);
  for (auto& m : by_mask.key_mask) m = rng() % 3 != 0;  // scattered holes inside blocks
  std::fill_n(by_mask.key_mask.begin() + 131, 131, 0);  // batch item 1: every key hidden
  for (TestCase* c : {&by_length, &by_mask}) {
    // NaN in the values of hidden keys must not leak: a hidden key takes no part at all.
    for (std::int64_t j = 0; j < 131; ++j)
      if (!c->key_valid(2, j)) std::memset(c->v_bytes.data() + (2 * 131 + j) * 64 * 4, 0xFF, 64 * 4);
    for (const AttentionBackend* backend : {&flash_attn_backend(), &torch_sdpa_backend()}) {
      EXPECT_LT(run_and_compare(*backend, *c), 1e-6) << backend->name();
      const std::vector<double> got = c->output();
      const std::size_t row_block = 77 * 2 * 64;  // batch item 1: exact zeros
      for (std::size_t e = row_block; e < 2 * row_block; ++e) ASSERT_EQ(got[e], 0.0) << backend->name();
    }
  }
}

TEST(CpuBackends, NarrowOutputsAreTheFp32ResultRoundedOnce) {
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (DType t : {DType::BF16, DType::F16, DType::F64}) {
    for (const AttentionBackend* backend : {&flash_attn_backend(), &torch_sdpa_backend()}) {
      if (!backend->supports(shape_of(1, 77, 131, 2, 2, 64, t), Device::CPU).ok) continue;
      TestCase narrow = make_case(shape_of(1, 77, 131, 2, 2, 64, t), seed);
      // The same (exactly representable) values as fp32 inputs.
      TestCase wide = make_case(shape_of(1, 77, 131, 2, 2, 64), seed);
      for (auto [src, dst] : {std::pair{&narrow.q, &wide.q_bytes}, {&narrow.k, &wide.k_bytes}, {&narrow.v, &wide.v_bytes}})
        std::memcpy(dst->data(), src->data(), src->size() * sizeof(float));
      run_attention(*backend, narrow.problem(), {}, Device::CPU);
      run_attention(*backend, wide.problem(), {}, Device::CPU);
      std::vector<std::uint8_t> expected(narrow.out.size());
      from_f32(reinterpret_cast<const float*>(wide.out.data()), t, expected.data(), wide.out.size() / 4);
      EXPECT_EQ(narrow.out, expected) << backend->name() << " " << dtype_name(t);
    }
  }
}

TEST(CpuBackends, SdpaGeneralMasks) {
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  AttentionShape shape = shape_of(2, 33, 45, 2, 2, 16);
  shape.mask = MaskKind::General;
  std::mt19937 rng(seed);
  for (std::int64_t heads : {1, 2}) {
    TestCase c = make_case(shape, seed);
    const auto at = [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
      return ((b * heads + (heads == 1 ? 0 : h)) * 33 + i) * 45 + j;
    };
    std::vector<std::uint8_t> keep(2 * heads * 33 * 45);
    for (auto& m : keep) m = rng() % 2 ? 7 : 0;  // nonzero attends, not only 1
    std::fill_n(keep.begin() + at(1, 0, 5, 0), 45, 0);  // a fully hidden row
    c.mask = GeneralMask{GeneralMaskType::Boolean, keep.data(), heads};
    EXPECT_LT(run_and_compare(torch_sdpa_backend(), c, {}, [&](auto b, auto h, auto i, auto j) {
                return keep[at(b, h, i, j)] ? 0.0 : kNegInf;
              }), 1e-6);
    EXPECT_EQ(c.output()[((1 * 33 + 5) * 2 + 0) * 16], 0.0);

    std::vector<float> add(keep.size());
    for (auto& a : add) a = std::uniform_real_distribution<float>(-3, 3)(rng);
    add[at(0, 0, 7, 3)] = -std::numeric_limits<float>::infinity();
    std::fill_n(add.begin() + at(1, 0, 9, 0), 45, -std::numeric_limits<float>::infinity());
    c.mask = GeneralMask{GeneralMaskType::Additive, add.data(), heads};
    EXPECT_LT(run_and_compare(torch_sdpa_backend(), c, {}, [&](auto b, auto h, auto i, auto j) {
                return double(add[at(b, h, i, j)]);
              }), 1e-6);
    EXPECT_EQ(c.output()[((1 * 33 + 9) * 2 + 0) * 16], 0.0);
  }
}

TEST(CpuBackends, SupportAnswers) {
  AttentionShape s = shape_of(1, 64, 64, 2, 2, 64, DType::F64);
  EXPECT_EQ(flash_attn_backend().supports(s, Device::CPU).reason, "dtype fp64 not in {fp32, bf16, fp16}");
  EXPECT_TRUE(torch_sdpa_backend().supports(s, Device::CPU).ok);
  s.dtype = DType::BF16;
  EXPECT_TRUE(flash_attn_backend().supports(s, Device::CPU).ok);
  EXPECT_EQ(sparse_block_backend().supports(s, Device::CPU).reason, "dtype bf16 not in {fp32}");
  s.dtype = DType::F32;
  s.head_dim = 200;
  EXPECT_TRUE(flash_attn_backend().supports(s, Device::CPU).ok);
  EXPECT_TRUE(sparse_block_backend().supports(s, Device::CPU).ok);
  s.mask = MaskKind::General;
  EXPECT_EQ(flash_attn_backend().supports(s, Device::CPU).reason, "general masks are supported only by TORCH_SDPA");
  EXPECT_EQ(sparse_block_backend().supports(s, Device::CPU).reason, "general masks are supported only by TORCH_SDPA");
  EXPECT_TRUE(torch_sdpa_backend().supports(s, Device::CPU).ok);
  for (const AttentionBackend* b : {&flash_attn_backend(), &torch_sdpa_backend(), &sparse_block_backend()}) {
    // Without a usable GPU every backend refuses CUDA, saying why (with one, the CUDA tests cover it).
    if (cuda_device_count() == 0) {
      EXPECT_FALSE(b->supports(shape_of(1, 64, 64, 2, 2, 64, DType::BF16), Device::CUDA).ok) << b->name();
    }
    EXPECT_FALSE(b->surface(Device::CPU).dtypes.empty());
  }
  EXPECT_FALSE(flash_attn_backend().lossy());
  EXPECT_FALSE(torch_sdpa_backend().lossy());
  EXPECT_TRUE(sparse_block_backend().lossy());
}

TEST(CpuBackends, SparseExtrasAreChecked) {
  const AttentionBackend& sparse = sparse_block_backend();
  EXPECT_NO_THROW(validate_extra(sparse, {{"block_size", 64}, {"density", 1.0}, {"keep_diagonal", false}}, "test"));
  const auto message = [&](const nlohmann::json& extra) {
    try {
      validate_extra(sparse, extra, "test");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"block_size", 96}}).find("must be 64 or 128"), std::string::npos);
  EXPECT_NE(message({{"density", 0}}).find("must be in (0, 1]"), std::string::npos);
  EXPECT_NE(message({{"cdf_threshold", 1.5}}).find("must be in (0, 1]"), std::string::npos);
  const nlohmann::json filled = extra_with_defaults(sparse, nlohmann::json::object());
  EXPECT_EQ(filled.value("block_size", 0), 128);
  EXPECT_FALSE(filled.contains("density"));  // absent, so the backend can tell it was not given
}

TEST(CpuBackends, SparseAtDensityOneEqualsFlash) {
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  AttentionShape shape = shape_of(2, 200, 333, 4, 2, 64);
  shape.mask = MaskKind::KeyPadding;
  for (std::int64_t bs : {64, 128}) {
    TestCase flash = make_case(shape, seed), sparse = make_case(shape, seed);
    flash.key_lengths = sparse.key_lengths = {333, 150};
    run_attention(flash_attn_backend(), flash.problem(), {}, Device::CPU);
    run_attention(sparse_block_backend(), sparse.problem(), {{"block_size", bs}, {"density", 1.0}}, Device::CPU);
    // Density 1 keeps every block: the backend runs FLASH_ATTN itself, so the outputs are identical.
    EXPECT_EQ(sparse.output(), flash.output()) << "block_size " << bs;
    // With a cdf threshold the mask is estimated even at density 1 (the smaller set wins).
    TestCase cdf = make_case(shape, seed);
    cdf.key_lengths = {333, 150};
    run_attention(sparse_block_backend(), cdf.problem(), {{"block_size", bs}, {"density", 1.0}, {"cdf_threshold", 0.5}},
                  Device::CPU);
    EXPECT_GT(rel_l2(cdf.output(), flash.output()), 1e-3) << "block_size " << bs;
  }
}

TEST(CpuBackends, SparseEqualsExactAttentionOverKeptBlocks) {
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  AttentionShape shape = shape_of(2, 300, 450, 4, 2, 32);
  shape.mask = MaskKind::KeyPadding;
  TestCase c = make_case(shape, seed);
  c.key_lengths = {450, 200};
  const nlohmann::json extra = {{"block_size", 64}, {"density", 0.5}};
  run_attention(sparse_block_backend(), c.problem(), extra, Device::CPU);
  sparse::BlockMaskOptions options;
  options.block_size = 64;
  options.density = 0.5;
  const sparse::BlockMask mask = sparse::estimate_block_mask(c.problem(), options);
  ASSERT_EQ(mask.query_blocks, 5);
  ASSERT_EQ(mask.key_blocks, 8);
  EXPECT_EQ(mask.at(0, 0, 0).size(), 4u);  // ceil(0.5 * 8)
  EXPECT_EQ(mask.at(1, 3, 4).size(), 2u);  // batch item 1: 200 keys -> 4 valid blocks -> 2
  const std::vector<double> restricted = naive_attention(c, [&](auto b, auto h, auto i, auto j) {
    const auto& kept = mask.at(b, h, i / 64);
    return std::find(kept.begin(), kept.end(), j / 64) != kept.end() ? 0.0 : kNegInf;
  });
  EXPECT_LT(rel_l2(c.output(), restricted), 1e-6);
}

}  // namespace
}  // namespace dattn
