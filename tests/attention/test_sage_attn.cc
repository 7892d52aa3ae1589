// SAGE_ATTN: the quantization steps one by one, end-to-end accuracy against an exact float64
// attention computed here, and bit-level agreement with a plain re-implementation of the scheme
// (docs/backend-semantics.md, SAGE_ATTN), which is the check a CUDA kernel will get.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "attention/backends/backends.h"
#include "attention/backends/sage_attn/sage_quant.h"
#include "dattn/attention/metrics.h"
#include "dattn/core/device.h"
#include "dattn/core/dtype.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // as in cpu_sage.cc: the plain re-implementation must not fuse
#endif

namespace dattn {
namespace {

using I64 = std::int64_t;

std::vector<float> randn(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  std::vector<float> x(n);
  for (auto& e : x) e = g(rng);
  return x;
}

// ---------------------------------------------------------------- quantization steps

TEST(SageQuant, Int8ScaleAndRoundsTiesToEven) {
  // Block 0: amax 127, so x8 = rne(x). Block 1: amax 254, so x8 = rne(x / 2).
  const std::vector<float> x = {127, -63.5f, 0.5f, 1.5f, 2.5f, -2.5f, -127, 3, 254, 3, 5, -5, 1, 0.9f, -1, 0};
  const sage::Int8Blocks q = sage::quantize_int8_blocks(x.data(), 4, 4, 2);
  EXPECT_EQ(q.scale, (std::vector<float>{1.0f, 2.0f}));
  const std::vector<std::int8_t> want = {127, -64, 0, 2, 2, -2, -127, 3, 127, 2, 2, -2, 0, 0, 0, 0};
  EXPECT_EQ(q.data, want);
}

TEST(SageQuant, Int8ClampsToSymmetricRange) {
  EXPECT_EQ(sage::quantize_int8(200.0f, 1.0f), 127);
  EXPECT_EQ(sage::quantize_int8(-200.0f, 1.0f), -127);  // never -128
  EXPECT_EQ(sage::quantize_int8(1.0f, 127.4f), 127);
  // The block maximum lands on +-127 whatever rounding x * (127 / amax) had.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(1e-3f, 1e3f);
  for (int t = 0; t < 1000; ++t) {
    const float a = u(rng), x[3] = {a, -a, a / 3};
    const auto q = sage::quantize_int8_blocks(x, 1, 3, 16);
    ASSERT_TRUE(q.data[0] == 127 && q.data[1] == -127 && q.scale[0] == a / 127.0f) << a;
  }
}

TEST(SageQuant, Int8ZeroAndTinyBlocksGiveScaleZero) {
  // Rows 0-15 zero; rows 16-31 so tiny that 127 / amax overflows: both scale 0 and zeros, never NaN.
  // Rows 32-34, a short block with amax 3 where the tiny value rounds to 0.
  std::vector<float> x(35 * 2, 0.0f);
  std::fill(x.begin() + 32, x.begin() + 64, 1e-38f);
  const float last[6] = {1e-38f, -2, -1, 0, 1, 3};
  std::copy_n(last, 6, x.begin() + 64);
  const auto q = sage::quantize_int8_blocks(x.data(), 35, 2, 16);
  EXPECT_EQ(q.scale, (std::vector<float>{0.0f, 0.0f, 3.0f / 127.0f}));
  for (int i = 0; i < 65; ++i) EXPECT_EQ(q.data[i], 0) << "element " << i;
  EXPECT_TRUE(q.data[65] == -85 && q.data[66] == -42 && q.data[69] == 127);
}

TEST(SageQuant, SmoothingZeroesValidMeanAndPadding) {
  const int n = 200, d = 16;
  std::vector<float> k = randn(n * d, 3);
  for (int i = 0; i < n * d; i += 3) k[i] += 8.0f;  // channel offsets
  sage::KeyValid valid(n, 1);
  for (int j = 0; j < n; j += 7) valid[j] = 0;
  std::fill_n(k.begin(), d, NAN);  // key 0 is padding, which may hold anything
  std::vector<double> want(d, 0.0);
  for (int j = 0; j < n; ++j)
    for (int c = 0; c < d && valid[j]; ++c) want[c] += k[j * d + c] / (n - 29.0);  // 29 invalid keys
  const auto mean = sage::smooth_k(k.data(), n, d, valid);
  for (int c = 0; c < d; ++c) {
    EXPECT_NEAR(mean[c], want[c], 1e-5 * (1 + std::fabs(want[c])));
    double s = 0;
    for (int j = 0; j < n; ++j) {
      s += valid[j] ? k[j * d + c] : 0.0;
      EXPECT_TRUE(valid[j] || k[j * d + c] == 0.0f) << "padding key " << j;
    }
    EXPECT_NEAR(s / (n - 29), 0.0, 1e-5) << "channel " << c;
  }
}

TEST(SageQuant, FoldsScaleAndLog2eIntoQ) {
  float q[2] = {1, -2};
  sage::fold_q_scale(q, 2, 0.125f);
  EXPECT_TRUE(q[0] == 0.125f * sage::kLog2e && q[1] == -2.0f * (0.125f * sage::kLog2e));
}

TEST(SageQuant, VPerChannelE4m3Reconstructs) {
  const int n = 300, d = 8;
  std::vector<float> v = randn(n * d, 5);
  for (int i = 0; i < n * d; ++i) v[i] = i % d == 7 ? 0.0f : v[i] * std::pow(10.0f, float(i % d) - 3.0f);
  sage::KeyValid valid(n, 1);
  valid[10] = 0;
  std::fill_n(v.begin() + 10 * d, d, 1e6f);  // padding must not set the channel scales
  const auto q = sage::quantize_v_e4m3(v.data(), n, d, valid);
  for (int c = 0; c < d; ++c) {
    float amax = 0;
    for (int j = 0; j < n; ++j) amax = valid[j] ? std::max(amax, std::fabs(v[j * d + c])) : amax;
    EXPECT_EQ(q.scale[c], amax == 0 ? 1.0f : amax / sage::kE4m3Max) << "channel " << c;
    for (int j = 0; j < n; ++j) {
      const double r = e4m3_to_f32(q.data[j * d + c]) * double(q.scale[c]), x = valid[j] ? v[j * d + c] : 0.0;
      // e4m3 keeps 3 mantissa bits: RNE error <= 2^-4 relative, or half the subnormal step 2^-9.
      EXPECT_LE(std::fabs(r - x), std::max(std::ldexp(std::fabs(x), -4), std::ldexp(double(q.scale[c]), -10)) * 1.0001);
    }
  }
}

// A problem and its storage in bf16/fp16 bits.
struct Case {
  AttentionShape shape;
  std::vector<std::uint16_t> q, k, v, out;
  std::vector<I64> key_lengths;
  std::vector<std::uint8_t> key_mask;

  AttentionProblem problem() {
    AttentionProblem p;
    p.shape = shape;
    p.shape.mask = key_lengths.empty() && key_mask.empty() ? MaskKind::None : MaskKind::KeyPadding;
    p.q = q.data(), p.k = k.data(), p.v = v.data(), p.out = out.data();
    p.key_lengths = key_lengths;
    p.key_mask = key_mask.empty() ? nullptr : key_mask.data();
    return p;
  }
  bool valid(I64 b, I64 j) const {
    return !key_lengths.empty() ? j < key_lengths[b] : key_mask.empty() || key_mask[b * shape.seq_k + j];
  }
  std::vector<float> f32(const std::vector<std::uint16_t>& x) const {
    std::vector<float> r(x.size());
    to_f32(x.data(), shape.dtype, r.data(), x.size());
    return r;
  }
};

// Gaussian q, k, v from `seed`; `edit(which, data)` may change them (0 q, 1 k, 2 v) before rounding.
template <class Edit = void (*)(int, std::vector<float>&)>
Case make_case(I64 B, I64 Sq, I64 Sk, I64 Hq, I64 Hkv, I64 D, DType dt, unsigned seed,
               Edit edit = [](int, std::vector<float>&) {}) {
  Case c;
  c.shape = {B, Sq, Sk, Hq, Hkv, D, dt, MaskKind::None};
  std::vector<std::uint16_t>* dst[3] = {&c.q, &c.k, &c.v};
  for (int w = 0; w < 3; ++w) {
    std::vector<float> f = randn(B * (w ? Sk * Hkv : Sq * Hq) * D, seed * 3 + w);
    edit(w, f);
    dst[w]->resize(f.size());
    from_f32(f.data(), dt, dst[w]->data(), f.size());
  }
  c.out.assign(B * Sq * Hq * D, 0x7FFF);  // NaN in bf16 and fp16: unwritten elements show up
  return c;
}

void run_sage(Case& c) { run_attention(sage_attn_backend(), c.problem(), nlohmann::json::object(), Device::CPU); }

// Exact attention in double from the inputs' exact values.
std::vector<double> exact(const Case& c) {
  const auto& s = c.shape;
  const auto q = c.f32(c.q), k = c.f32(c.k), v = c.f32(c.v);
  const I64 D = s.head_dim, group = s.heads_q / s.heads_kv;
  std::vector<double> out(q.size(), 0.0), w(s.seq_k);
  for (I64 b = 0; b < s.batch; ++b)
    for (I64 h = 0; h < s.heads_q; ++h)
      for (I64 i = 0; i < s.seq_q; ++i) {
        const float* qi = &q[((b * s.seq_q + i) * s.heads_q + h) * D];
        auto kv = [&](I64 j) { return ((b * s.seq_k + j) * s.heads_kv + h / group) * D; };
        double m = -INFINITY, l = 0;
        for (I64 j = 0; j < s.seq_k; ++j) {
          double dot = 0;
          for (I64 d = 0; d < D; ++d) dot += double(qi[d]) * k[kv(j) + d];
          w[j] = c.valid(b, j) ? dot / std::sqrt(double(D)) : -INFINITY;
          m = std::max(m, w[j]);
        }
        double* o = &out[((b * s.seq_q + i) * s.heads_q + h) * D];
        for (I64 j = 0; j < s.seq_k && m > -INFINITY; ++j) l += std::exp(w[j] - m);  // 0 for invalid keys
        for (I64 j = 0; j < s.seq_k && m > -INFINITY; ++j)
          for (I64 d = 0; d < D; ++d) o[d] += std::exp(w[j] - m) / l * v[kv(j) + d];
      }
  return out;
}

ErrorStats compare_f32(const std::vector<float>& got, const std::vector<double>& ref) {
  const std::vector<double> g(got.begin(), got.end());
  const ErrorStats e = compare(g.data(), ref.data(), ref.size());
  EXPECT_EQ(e.nonfinite, 0u);
  return e;
}

ErrorStats run_and_compare(Case& c, const char* what) {
  run_sage(c);
  const ErrorStats e = compare_f32(c.f32(c.out), exact(c));
  std::printf("[ SAGE     ] %-24s %s: %s\n", what, c.problem().shape.describe().c_str(), describe(e).c_str());
  return e;
}

// Steps 1-7 written plainly per (b, h) on whole matrices; only the online softmax is tiled, because
// the tiling is part of the scheme. `smooth` = false skips step 1 (to show what it buys).
std::vector<float> plain_sage(const Case& c, bool smooth = true) {
  const auto& s = c.shape;
  const I64 Sq = s.seq_q, Sk = s.seq_k, D = s.head_dim, group = s.heads_q / s.heads_kv;
  const auto Q = c.f32(c.q), K = c.f32(c.k), V = c.f32(c.v);
  std::vector<float> out(Q.size(), 0.0f);
  auto quant = [&](std::vector<float>& x, I64 rows, I64 blk, std::vector<float>& sc) {
    sc.assign(rows, 0.0f);  // per row: the scale of its block
    for (I64 r0 = 0; r0 < rows; r0 += blk) {
      const I64 r1 = std::min(rows, r0 + blk);
      float amax = 0;
      for (I64 i = r0 * D; i < r1 * D; ++i) amax = std::max(amax, std::fabs(x[i]));
      const float inv = 127.0f / amax;
      const bool zero = amax == 0 || !std::isfinite(inv);
      for (I64 i = r0 * D; i < r1 * D; ++i) x[i] = zero ? 0.0f : std::clamp(std::nearbyint(x[i] * inv), -127.0f, 127.0f);
      for (I64 r = r0; r < r1; ++r) sc[r] = zero ? 0.0f : amax / 127.0f;
    }
  };
  for (I64 b = 0; b < s.batch; ++b)
    for (I64 h = 0; h < s.heads_q; ++h) {
      std::vector<float> q(Sq * D), k(Sk * D), v(Sk * D), mean(D, 0.0f), sq, sk, sv(D, 0.0f);
      I64 n = 0;
      for (I64 x = 0; x < Sq * D; ++x) q[x] = Q[((b * Sq + x / D) * s.heads_q + h) * D + x % D];
      for (I64 j = 0; j < Sk; ++j) {
        n += c.valid(b, j);
        for (I64 d = 0; d < D; ++d) {
          k[j * D + d] = c.valid(b, j) ? K[((b * Sk + j) * s.heads_kv + h / group) * D + d] : 0.0f;
          v[j * D + d] = c.valid(b, j) ? V[((b * Sk + j) * s.heads_kv + h / group) * D + d] : 0.0f;
          mean[d] += k[j * D + d];  // 1. smooth K
        }
      }
      for (I64 x = 0; x < Sk * D; ++x)
        if (smooth && c.valid(b, x / D)) k[x] -= mean[x % D] / float(n);
      for (auto& x : q) x *= (1.0f / std::sqrt(float(D))) * sage::kLog2e;  // 2. fold scale * log2(e)
      quant(q, Sq, 16, sq);  // 3. INT8 blocks
      quant(k, Sk, 64, sk);
      for (I64 x = 0; x < Sk * D; ++x) sv[x % D] = std::max(sv[x % D], std::fabs(v[x]));  // 5. V in e4m3
      for (auto& x : sv) x = x / 448.0f == 0 ? 1.0f : x / 448.0f;
      for (I64 x = 0; x < Sk * D; ++x) v[x] = e4m3_to_f32(f32_to_e4m3(v[x] / sv[x % D]));
      for (I64 i = 0; i < Sq; ++i) {
        std::vector<float> S(Sk), acc(D, 0.0f);
        for (I64 j = 0; j < Sk; ++j) {  // 4. scores
          std::int32_t dot = 0;
          for (I64 d = 0; d < D; ++d) dot += std::int32_t(q[i * D + d]) * std::int32_t(k[j * D + d]);
          S[j] = c.valid(b, j) ? float(dot) * (sq[i] * sk[j]) : -INFINITY;
        }
        float m = -INFINITY, l = 0;
        for (I64 t0 = 0; t0 < Sk; t0 += 128) {  // 6. online softmax per KV tile
          const I64 t1 = std::min(Sk, t0 + 128);
          const float m_new = std::max(m, *std::max_element(&S[t0], &S[0] + t1));
          if (m_new == -INFINITY) continue;
          const float alpha = std::exp2(m - m_new);
          float psum = 0;
          std::vector<float> pv(D, 0.0f);
          for (I64 j = t0; j < t1; ++j) {
            const float p = std::exp2(S[j] - m_new);
            const float p8 = e4m3_to_f32(f32_to_e4m3(p * 448.0f));
            psum += p8;  // l from the quantized p, in units of 448
            for (I64 d = 0; d < D; ++d) pv[d] += p8 * v[j * D + d];
          }
          l = l * alpha + psum;
          for (I64 d = 0; d < D; ++d) acc[d] = acc[d] * alpha + pv[d];
          m = m_new;
        }
        for (I64 d = 0; d < D && m > -INFINITY; ++d)  // 7. output
          out[((b * Sq + i) * s.heads_q + h) * D + d] = acc[d] * sv[d] / l;
      }
    }
  return out;
}

// ---------------------------------------------------------------- accuracy against exact attention

// On iid Gaussian inputs the scheme's error is about 3.5-4% relative (L1 and L2): e4m3 rounding of P
// and of V contributes about 2.5% each, INT8 Q.K about 1.2% (measured by switching each step off).
constexpr double kGaussianRelErr = 0.045;

TEST(SageAttn, GaussianBf16AndFp16OddLengths) {
  for (Case c : {make_case(2, 256, 256, 4, 4, 64, DType::BF16, 11), make_case(2, 256, 256, 4, 4, 128, DType::BF16, 12),
                 make_case(1, 77, 131, 3, 3, 64, DType::F16, 13)}) {
    const ErrorStats e = run_and_compare(c, "gaussian");
    EXPECT_GE(e.cosine, 0.999);
    EXPECT_LE(e.rel_l1, kGaussianRelErr);
    EXPECT_LE(e.rel_l2, kGaussianRelErr);
  }
}

// K with a large offset on random channels, as real K has. Smoothing keeps INT8's resolution for what
// differs between keys; the plain scheme without step 1 shows what it buys.
TEST(SageAttn, KeyChannelOffsetIsSmoothed) {
  for (float off : {8.0f, 32.0f}) {
    std::mt19937 pick(31);
    std::vector<float> offset(128);
    for (auto& o : offset) o = pick() % 4 == 0 ? off : 0.0f;
    Case c = make_case(2, 256, 256, 4, 4, 128, DType::BF16, 32, [&](int w, std::vector<float>& x) {
      for (std::size_t i = 0; i < x.size() && w == 1; ++i) x[i] += offset[i % 128];
    });
    const ErrorStats e = run_and_compare(c, off == 8 ? "K channel offset +8" : "K channel offset +32");
    EXPECT_GE(e.cosine, 0.99);
    EXPECT_LE(e.rel_l1, kGaussianRelErr);
    const ErrorStats r = compare_f32(plain_sage(c, false), exact(c));
    std::printf("[ SAGE     ]   the same without smoothing: %s\n", describe(r).c_str());
    EXPECT_LT(e.rel_l2, r.rel_l2);
  }
}

TEST(SageAttn, HeavyTailedQKOutliers) {
  Case c = make_case(1, 256, 320, 4, 2, 128, DType::BF16, 41, [](int w, std::vector<float>& x) {
    std::mt19937 rng(w);
    std::student_t_distribution<float> t(3.0f);  // heavy tails in Q and K: |x| reaches ~20-50
    for (auto& e : x) e = w == 2 ? e : t(rng);
  });
  const ErrorStats e = run_and_compare(c, "student-t(3) Q/K");
  EXPECT_GE(e.cosine, 0.99);
}

TEST(SageAttn, GroupedQueryAttentionMatchesRepeatedHeads) {
  Case g = make_case(1, 100, 150, 8, 2, 64, DType::BF16, 51);
  EXPECT_GE(run_and_compare(g, "GQA 8/2").cosine, 0.999);
  // The same problem with each kv head repeated for its 4 query heads gives the same bits.
  Case r = g;
  r.shape.heads_kv = 8;
  r.k.clear(), r.v.clear();
  for (I64 row = 0; row < 150 * 8; ++row) {  // (key j, head h) takes kv head h / 4 of key j
    const I64 src = (row / 8 * 2 + row % 8 / 4) * 64;
    r.k.insert(r.k.end(), g.k.begin() + src, g.k.begin() + src + 64);
    r.v.insert(r.v.end(), g.v.begin() + src, g.v.begin() + src + 64);
  }
  run_sage(r);
  EXPECT_EQ(r.out, g.out);
}

TEST(SageAttn, KeyPaddingAndFullyMaskedRows) {
  // Padding keys hold huge values: none of them may leak into scales or outputs.
  Case c = make_case(3, 77, 200, 2, 2, 64, DType::BF16, 61, [](int w, std::vector<float>& x) {
    for (std::size_t i = 0; i < x.size() && w > 0; ++i) x[i] = i / 128 % 200 >= 131 ? 3e4f : x[i];
  });
  c.key_lengths = {131, 1, 0};
  EXPECT_GE(run_and_compare(c, "key lengths {131, 1, 0}").cosine, 0.999);
  for (std::size_t i = 2 * 77 * 2 * 64; i < c.out.size(); ++i) ASSERT_EQ(c.out[i], 0) << "masked row element " << i;
  // Batch item 0 equals the same problem cut to its 131 valid keys, bit for bit.
  Case cut = make_case(1, 77, 131, 2, 2, 64, DType::BF16, 0);
  for (auto [to, from] : {std::pair{&cut.q, &c.q}, {&cut.k, &c.k}, {&cut.v, &c.v}})
    std::copy_n(from->begin(), to->size(), to->begin());
  run_sage(cut);
  EXPECT_TRUE(std::equal(cut.out.begin(), cut.out.end(), c.out.begin()));
}

TEST(SageAttn, BooleanKeyMaskWithEmptyFirstTile) {
  Case c = make_case(2, 40, 300, 2, 1, 128, DType::BF16, 71);
  c.key_mask.assign(2 * 300, 0);
  for (int j = 140; j < 300; j += 3) c.key_mask[j] = 1;  // item 0: tile 0 has no valid key; item 1 none
  EXPECT_GE(run_and_compare(c, "key mask, item 1 empty").cosine, 0.999);
  for (std::size_t i = c.out.size() / 2; i < c.out.size(); ++i) ASSERT_EQ(c.out[i], 0);
}

// Step 6 normalises by the sum of the quantized weights, so each output row is an exact weighted mean of
// the v8 rows: when every key holds the same value per channel, the output is that value (up to output
// rounding) however P was rounded. Normalising by the sum of the unquantized p instead misses it by the
// e4m3 rounding of the weights, which the 4x scaled queries (a few keys dominating) make ~1%.
TEST(SageAttn, ConstantValuesComeOutExactly) {
  constexpr I64 Sq = 64, Sk = 300, Hq = 4, Hkv = 2, D = 128;
  for (DType dt : {DType::BF16, DType::F16}) {
    Case c = make_case(1, Sq, Sk, Hq, Hkv, D, dt, 91, [](int w, std::vector<float>& x) {
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (w == 0) x[i] *= 4.0f;
        if (w == 2) x[i] = x[i % (Hkv * D)];  // key 0's row of each kv head, for every key
      }
    });
    run_sage(c);
    const std::vector<float> out = c.f32(c.out), v = c.f32(c.v);
    std::vector<double> want(out.size());
    for (I64 i = 0; i < Sq; ++i)
      for (I64 h = 0; h < Hq; ++h)
        for (I64 d = 0; d < D; ++d) want[(i * Hq + h) * D + d] = v[(h / (Hq / Hkv)) * D + d];
    const ErrorStats e = compare_f32(out, want);
    std::printf("[ SAGE     ] constant V %s: %s\n", std::string(dtype_name(dt)).c_str(), describe(e).c_str());
    EXPECT_LE(e.rel_l2, 1e-3) << dtype_name(dt);
  }
}

TEST(SageAttn, MatchesPlainReimplementationBitForBit) {
  Case a = make_case(2, 77, 131, 4, 2, 64, DType::BF16, 81);
  a.key_lengths = {131, 70};
  Case b = make_case(1, 40, 300, 2, 1, 128, DType::F16, 82);
  b.key_mask.assign(300, 0);
  for (int j = 130; j < 300; j += 2) b.key_mask[j] = 1;
  for (Case* c : {&a, &b}) {
    run_sage(*c);
    const auto plain = plain_sage(*c);
    std::vector<std::uint16_t> want(plain.size());
    from_f32(plain.data(), c->shape.dtype, want.data(), plain.size());
    EXPECT_EQ(want, c->out) << c->problem().shape.describe();
  }
}

TEST(SageBackend, SupportPredicateAndSurface) {
  const auto& be = sage_attn_backend();
  EXPECT_TRUE(be.name() == "SAGE_ATTN" && be.lossy());
  ASSERT_EQ(be.extra_keys().size(), 1u);
  EXPECT_EQ(be.extra_keys()[0].name, "kernel");
  auto why = [&](DType t, I64 d, MaskKind m, Device dev = Device::CPU) {
    const Support s = be.supports({1, 16, 16, 2, 2, d, t, m}, dev);
    return s.ok ? std::string("ok") : s.reason;
  };
  EXPECT_EQ(why(DType::BF16, 128, MaskKind::KeyPadding), "ok");
  EXPECT_EQ(why(DType::F16, 64, MaskKind::None), "ok");
  EXPECT_EQ(why(DType::F16, 256, MaskKind::None), "head_dim 256 not in {64, 128}");
  EXPECT_EQ(why(DType::F16, 256, MaskKind::None, Device::CUDA), "head_dim 256 not in {64, 128}");  // same surface
  EXPECT_EQ(why(DType::F32, 64, MaskKind::None), "dtype fp32 not in {bf16, fp16}");
  EXPECT_EQ(why(DType::BF16, 64, MaskKind::General), "general masks are supported only by TORCH_SDPA");
  // On CUDA: ok wherever a device of compute capability 8.0+ is visible, else the reason CUDA is unusable.
  const bool cuda_ok = built_with_cuda() && cuda_device_count() > 0 && cuda_compute_capability() >= 80;
  EXPECT_EQ(why(DType::BF16, 64, MaskKind::None, Device::CUDA) == "ok", cuda_ok);
  const auto surf = be.surface(Device::CPU);
  EXPECT_EQ(surf.dtypes, (std::vector<DType>{DType::BF16, DType::F16}));
  EXPECT_TRUE(surf.head_dims == "64, 128" && surf.masks == "key padding");
}

}  // namespace
}  // namespace dattn
