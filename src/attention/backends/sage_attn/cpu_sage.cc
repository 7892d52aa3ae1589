#include "attention/backends/sage_attn/cpu_sage.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "dattn/core/dtype.h"

// The scheme is specified one fp32 operation at a time (docs/backend-semantics.md, SAGE_ATTN): no
// contraction into FMA even where -march allows it, so results reproduce bit for bit.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace dattn::sage {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The int8 values widened to int16, which the compiler turns into pmaddwd (about 2.5x faster).
std::int32_t dot_i16(const std::int16_t* a, const std::int16_t* b, std::int64_t d) {
  std::int32_t s = 0;  // exact: |sum| <= 128 * 127 * 127 fits easily
  for (std::int64_t c = 0; c < d; ++c) s += std::int32_t(a[c]) * std::int32_t(b[c]);
  return s;
}

// e4m3_to_f32 for all 256 codes: p8 is decoded once per (row, key), the hottest conversion here.
const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = e4m3_to_f32(std::uint8_t(i));
    return t;
  }();
  return table;
}

// NaN and Inf (docs/backend-semantics.md, SAGE_ATTN, "Non-finite inputs"): INT8 and FP8 cannot carry
// them through their scales (one Inf would make a whole block's scale Inf), so they are taken out before
// quantizing (as 0) and put back into the output: a non-finite value in a valid key makes every row of
// its head NaN (every row attends to that key), one in a valid value makes its channel NaN in every row,
// one in a query row makes that row NaN. Padding keys take no part, whatever they hold.
struct NonFiniteKV {
  bool key = false;                       // some valid key holds NaN/Inf
  std::vector<std::uint8_t> value_channel;  // [d]: some valid value holds NaN/Inf in this channel
  bool value = false;
  bool any_valid = false;                 // a row with no valid key stays zero
};

NonFiniteKV take_out_nonfinite_kv(float* k, float* v, std::int64_t n, std::int64_t d, const KeyValid& valid) {
  NonFiniteKV bad;
  bad.value_channel.assign(static_cast<std::size_t>(d), 0);
  for (std::int64_t j = 0; j < n; ++j) {
    if (!is_valid(valid, j)) continue;
    bad.any_valid = true;
    for (std::int64_t c = 0; c < d; ++c) {
      float& kc = k[j * d + c];
      float& vc = v[j * d + c];
      if (!std::isfinite(kc)) bad.key = true, kc = 0.0f;
      if (!std::isfinite(vc)) bad.value = true, bad.value_channel[c] = 1, vc = 0.0f;
    }
  }
  return bad;
}

// Takes NaN/Inf out of q rows [rows, d] (as 0); returns which rows held any.
std::vector<std::uint8_t> take_out_nonfinite_q(float* q, std::int64_t rows, std::int64_t d) {
  std::vector<std::uint8_t> bad(static_cast<std::size_t>(rows), 0);
  for (std::int64_t i = 0; i < rows * d; ++i)
    if (!std::isfinite(q[i])) bad[static_cast<std::size_t>(i / d)] = 1, q[i] = 0.0f;
  return bad;
}

// Puts the taken-out NaN back into output rows [rows, d].
void put_back_nonfinite(float* o, std::int64_t rows, std::int64_t d, const NonFiniteKV& kv,
                        const std::vector<std::uint8_t>& q_bad) {
  if (!kv.any_valid) return;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = o + r * d;
    if (kv.key || q_bad[static_cast<std::size_t>(r)]) {
      std::fill(row, row + d, nan);
    } else if (kv.value) {
      for (std::int64_t c = 0; c < d; ++c)
        if (kv.value_channel[static_cast<std::size_t>(c)]) row[c] = nan;
    }
  }
}

// Online-softmax state of one query row.
struct RowState {
  float m = kNegInf;  // running max of the base-2 scores
  float l = 0.0f;     // running sum of p8 = e4m3(p * 448), so in units of 448
};

}  // namespace

PreparedKV prepare_kv(float* k, const float* v, std::int64_t n, std::int64_t d, KeyValid valid) {
  PreparedKV kv;
  kv.valid = std::move(valid);
  smooth_k(k, n, d, kv.valid);
  kv.k = quantize_int8_blocks(k, n, d, kKBlock);
  kv.k_wide.assign(kv.k.data.begin(), kv.k.data.end());
  kv.v = quantize_v_e4m3(v, n, d, kv.valid);
  kv.v_decoded.resize(kv.v.data.size());
  for (std::size_t i = 0; i < kv.v.data.size(); ++i) kv.v_decoded[i] = e4m3_to_f32(kv.v.data[i]);
  return kv;
}

Int8Blocks prepare_q(float* q, std::int64_t rows, std::int64_t d, float softmax_scale) {
  fold_q_scale(q, rows * d, softmax_scale);
  return quantize_int8_blocks(q, rows, d, kQBlock);
}

void attend_rows(const Int8Blocks& q, std::int64_t r0, std::int64_t r1, const PreparedKV& kv, float* out) {
  const std::int64_t d = q.dim, n = kv.k.rows, rows = r1 - r0;
  std::vector<RowState> st(rows);
  std::vector<float> acc(rows * d, 0.0f), s(kKvTile), p8(kKvTile), t(d);
  const std::array<float, 256>& decode = e4m3_table();
  const std::vector<std::int16_t> q_wide(q.data.begin() + r0 * d, q.data.begin() + r1 * d);

  for (std::int64_t j0 = 0; j0 < n; j0 += kKvTile) {
    const std::int64_t j1 = std::min(n, j0 + kKvTile);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t i = r0 + r;
      const std::int16_t* qi = q_wide.data() + r * d;
      const float sq = q.row_scale(i);
      // Step 4: exact int32 dot, one fp32 multiply by the product of the two block scales.
      float tile_max = kNegInf;
      for (std::int64_t j = j0; j < j1; ++j) {
        float sij = kNegInf;
        if (is_valid(kv.valid, j))
          sij = float(dot_i16(qi, kv.k_wide.data() + j * d, d)) * (sq * kv.k.row_scale(j));
        s[j - j0] = sij;
        tile_max = std::max(tile_max, sij);
      }
      RowState& rs = st[r];
      const float m_new = std::max(rs.m, tile_max);
      if (m_new == kNegInf) continue;  // no valid key yet: exp2(-inf - -inf) would be NaN
      const float alpha = std::exp2(rs.m - m_new);

      // Step 6: p8 = e4m3(p * 448); l and P.V both from p8, summed in key order.
      float psum = 0.0f;
      for (std::int64_t j = j0; j < j1; ++j) {
        const float p = std::exp2(s[j - j0] - m_new);
        p8[j - j0] = decode[f32_to_e4m3(p * kPScale)];
        psum += p8[j - j0];
      }
      std::fill(t.begin(), t.end(), 0.0f);
      for (std::int64_t j = j0; j < j1; ++j) {
        const float pj = p8[j - j0];
        if (pj == 0.0f) continue;  // adding 0 * v changes no sum; skip the row of V
        const float* vj = kv.v_decoded.data() + j * d;
        for (std::int64_t c = 0; c < d; ++c) t[c] += pj * vj[c];
      }
      rs.l = rs.l * alpha + psum;
      float* a = acc.data() + r * d;
      for (std::int64_t c = 0; c < d; ++c) a[c] = a[c] * alpha + t[c];
      rs.m = m_new;
    }
  }

  // Step 7: undo the V channel scales, divide by l (which carries the P scale).
  for (std::int64_t r = 0; r < rows; ++r) {
    float* o = out + r * d;
    const float* a = acc.data() + r * d;
    if (st[r].m == kNegInf) {
      std::fill(o, o + d, 0.0f);
      continue;
    }
    const float denom = st[r].l;
    for (std::int64_t c = 0; c < d; ++c) o[c] = a[c] * kv.v.scale[c] / denom;
  }
}

void sage_attention_cpu(const AttentionProblem& problem) {
  const AttentionShape& sh = problem.shape;
  const std::int64_t B = sh.batch, Sq = sh.seq_q, Sk = sh.seq_k, Hq = sh.heads_q, Hkv = sh.heads_kv,
                     D = sh.head_dim, group = Hq / Hkv;
  const DType dt = sh.dtype;
  const std::size_t esz = dtype_size(dt);
  const float scale = problem.softmax_scale();
  const auto* qb = static_cast<const unsigned char*>(problem.q);
  const auto* kb = static_cast<const unsigned char*>(problem.k);
  const auto* vb = static_cast<const unsigned char*>(problem.v);
  auto* ob = static_cast<unsigned char*>(problem.out);
  const std::int64_t n_qblocks = (Sq + kQBlock - 1) / kQBlock;

  // K and V are prepared per (b, kv head) so memory stays one head's worth; the query heads of the
  // group and their query blocks then run in parallel on it.
  for (std::int64_t b = 0; b < B; ++b) {
    KeyValid valid;
    if (problem.has_key_padding()) {
      valid.resize(Sk);
      for (std::int64_t j = 0; j < Sk; ++j) valid[j] = problem.key_valid(b, j) ? 1 : 0;
    }
    for (std::int64_t hk = 0; hk < Hkv; ++hk) {
      std::vector<float> k(Sk * D), v(Sk * D);
#pragma omp parallel for schedule(static)
      for (std::int64_t j = 0; j < Sk; ++j) {
        const std::size_t off = static_cast<std::size_t>(((b * Sk + j) * Hkv + hk) * D) * esz;
        to_f32(kb + off, dt, k.data() + j * D, D);
        to_f32(vb + off, dt, v.data() + j * D, D);
      }
      const NonFiniteKV bad = take_out_nonfinite_kv(k.data(), v.data(), Sk, D, valid);
      const PreparedKV kv = prepare_kv(k.data(), v.data(), Sk, D, valid);

#pragma omp parallel for schedule(dynamic, 1)
      for (std::int64_t task = 0; task < group * n_qblocks; ++task) {
        const std::int64_t h = hk * group + task / n_qblocks;
        const std::int64_t i0 = (task % n_qblocks) * kQBlock, rows = std::min(kQBlock, Sq - i0);
        std::vector<float> q(rows * D), o(rows * D);
        for (std::int64_t r = 0; r < rows; ++r)
          to_f32(qb + static_cast<std::size_t>(((b * Sq + i0 + r) * Hq + h) * D) * esz, dt, q.data() + r * D, D);
        // One query block quantizes exactly as it would inside the whole head (its own scale).
        const std::vector<std::uint8_t> q_bad = take_out_nonfinite_q(q.data(), rows, D);
        const Int8Blocks q8 = prepare_q(q.data(), rows, D, scale);
        attend_rows(q8, 0, rows, kv, o.data());
        put_back_nonfinite(o.data(), rows, D, bad, q_bad);
        for (std::int64_t r = 0; r < rows; ++r)
          from_f32(o.data() + r * D, dt, ob + static_cast<std::size_t>(((b * Sq + i0 + r) * Hq + h) * D) * esz, D);
      }
    }
  }
}

}  // namespace dattn::sage
