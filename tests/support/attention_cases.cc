#include "attention_cases.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dattn::test {

std::string_view mask_mode_name(MaskMode m) {
  switch (m) {
    case MaskMode::None: return "none";
    case MaskMode::Lengths: return "key_lengths";
    case MaskMode::KeyMask: return "key_mask";
    case MaskMode::EmptyRow: return "empty_rows";
  }
  return "?";
}

std::vector<float> gaussian(std::size_t n, std::mt19937_64& rng, float mean, float stddev) {
  std::normal_distribution<float> dist(mean, stddev);
  std::vector<float> x(n);
  for (float& e : x) e = dist(rng);
  return x;
}

std::vector<std::uint8_t> encode_f32(const std::vector<float>& x, DType t) {
  std::vector<std::uint8_t> bytes(x.size() * dtype_size(t));
  from_f32(x.data(), t, bytes.data(), x.size());
  return bytes;
}

std::vector<std::uint8_t> encode_f64(const std::vector<double>& x, DType t) {
  std::vector<std::uint8_t> bytes(x.size() * dtype_size(t));
  from_f64(x.data(), t, bytes.data(), x.size());
  return bytes;
}

std::vector<double> decode(const void* data, DType t, std::size_t n) {
  std::vector<double> out(n);
  to_f64(data, t, out.data(), n);
  return out;
}

GuardedOutput::GuardedOutput(std::size_t bytes) : buf_(bytes + 2 * kGuard, kSentinel), bytes_(bytes) {
  std::memset(buf_.data() + kGuard, 0xFF, bytes);
}

std::size_t GuardedOutput::corrupted_guard_bytes() const {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < kGuard; ++i) {
    bad += buf_[i] != kSentinel;
    bad += buf_[kGuard + bytes_ + i] != kSentinel;
  }
  return bad;
}

AttentionProblem AttentionCase::problem() {
  AttentionProblem p;
  p.shape = shape;
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.out = out.data();
  p.scale = scale;
  p.key_lengths = key_lengths;
  if (!key_mask.empty()) p.key_mask = key_mask.data();
  if (!general_mask.empty()) p.mask = GeneralMask{GeneralMaskType::Boolean, general_mask.data(), general_mask_heads};
  return p;
}

bool AttentionCase::row_has_key(std::int64_t b, std::int64_t h, std::int64_t i) const {
  for (std::int64_t j = 0; j < shape.seq_k; ++j) {
    if (shape.mask == MaskKind::Causal && j > i) return false;  // later keys are hidden
    if (!key_lengths.empty() && j >= key_lengths[b]) continue;
    if (!key_mask.empty() && !key_mask[b * shape.seq_k + j]) continue;
    if (!general_mask.empty()) {
      const std::int64_t mh = general_mask_heads == 1 ? 0 : h;
      if (!general_mask[((b * general_mask_heads + mh) * shape.seq_q + i) * shape.seq_k + j]) continue;
    }
    return true;
  }
  return false;
}

void reset_output(AttentionCase& c) { c.out = GuardedOutput(c.out_numel() * dtype_size(c.shape.dtype)); }

AttentionCase make_random_case(AttentionShape shape, MaskMode mode, std::uint64_t seed) {
  if (mode == MaskMode::EmptyRow) shape.batch = std::max<std::int64_t>(shape.batch, 2);
  shape.mask = mode == MaskMode::None ? MaskKind::None : MaskKind::KeyPadding;
  AttentionCase c;
  c.shape = shape;
  c.seed = seed;
  std::mt19937_64 rng(seed);
  const std::int64_t B = shape.batch, Sk = shape.seq_k, D = shape.head_dim;
  c.q = encode_f32(gaussian(std::size_t(B * shape.seq_q * shape.heads_q * D), rng), shape.dtype);
  c.k = encode_f32(gaussian(std::size_t(B * Sk * shape.heads_kv * D), rng), shape.dtype);
  c.v = encode_f32(gaussian(std::size_t(B * Sk * shape.heads_kv * D), rng), shape.dtype);
  // Lengths cut into the middle of the sequence (crossing 64-key block edges for odd Sk) and differ
  // per batch item, so a backend that reads item 0's length for every item fails.
  std::uniform_int_distribution<std::int64_t> len(std::max<std::int64_t>(1, Sk / 3), Sk - 1);
  switch (mode) {
    case MaskMode::None: break;
    case MaskMode::Lengths:
      for (std::int64_t b = 0; b < B; ++b) c.key_lengths.push_back(len(rng));
      break;
    case MaskMode::EmptyRow:
      for (std::int64_t b = 0; b + 1 < B; ++b) c.key_lengths.push_back(len(rng));
      c.key_lengths.push_back(0);
      break;
    case MaskMode::KeyMask: {
      // Scattered holes (not a prefix), so a backend treating the mask as a length is caught.
      std::bernoulli_distribution keep(0.7);
      c.key_mask.resize(std::size_t(B * Sk));
      for (auto& m : c.key_mask) m = keep(rng) ? 1 : 0;
      for (std::int64_t b = 0; b < B; ++b) c.key_mask[b * Sk + (b * 7) % Sk] = 1;  // >= 1 key per item
      break;
    }
  }
  reset_output(c);
  return c;
}

AttentionCase make_case_from_f64(AttentionShape shape, const std::vector<double>& q, const std::vector<double>& k,
                                 const std::vector<double>& v) {
  AttentionCase c;
  shape.mask = MaskKind::None;
  c.shape = shape;
  c.q = encode_f64(q, shape.dtype);
  c.k = encode_f64(k, shape.dtype);
  c.v = encode_f64(v, shape.dtype);
  reset_output(c);
  return c;
}

std::string check_close(const std::vector<double>& got, const std::vector<double>& ref, const Limits& lim,
                        ErrorStats* stats) {
  if (got.size() != ref.size())
    return "size mismatch: " + std::to_string(got.size()) + " vs " + std::to_string(ref.size());
  const ErrorStats s = compare(got.data(), ref.data(), got.size());
  if (stats) *stats = s;
  std::string why;
  char buf[128];
  if (s.nonfinite) why += std::to_string(s.nonfinite) + " non-finite values; ";
  if (!(s.rel_l2 <= lim.max_rel_l2)) {
    std::snprintf(buf, sizeof buf, "rel_l2 %.3g > %.3g; ", s.rel_l2, lim.max_rel_l2);
    why += buf;
  }
  if (!(s.rel_l1 <= lim.max_rel_l1)) {
    std::snprintf(buf, sizeof buf, "rel_l1 %.3g > %.3g; ", s.rel_l1, lim.max_rel_l1);
    why += buf;
  }
  if (!(s.cosine >= lim.min_cosine)) {
    std::snprintf(buf, sizeof buf, "cosine %.9f < %.9f; ", s.cosine, lim.min_cosine);
    why += buf;
  }
  if (why.empty()) return {};
  return why + "(" + describe(s) + ")";
}

std::string check_output(const AttentionCase& c, const std::vector<double>& ref, const Limits& lim,
                         ErrorStats* stats) {
  if (std::size_t bad = c.out.corrupted_guard_bytes())
    return std::to_string(bad) + " guard bytes around the output were overwritten";
  const std::vector<double> got = c.output_f64();
  // NaN/Inf first: a forgotten element is still the 0xFF poison (NaN), and compare() would only
  // turn it into an infinite error without saying so.
  std::size_t nonfinite = 0;
  for (double x : got) nonfinite += !std::isfinite(x);
  if (nonfinite) return std::to_string(nonfinite) + " of " + std::to_string(got.size()) + " outputs are NaN/Inf";
  const auto& s = c.shape;
  std::size_t nonzero = 0, empty_rows = 0;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t i = 0; i < s.seq_q; ++i)
      for (std::int64_t h = 0; h < s.heads_q; ++h) {
        if (c.row_has_key(b, h, i)) continue;
        ++empty_rows;
        const double* o = &got[std::size_t(((b * s.seq_q + i) * s.heads_q + h) * s.head_dim)];
        for (std::int64_t d = 0; d < s.head_dim; ++d) nonzero += o[d] != 0.0;
      }
  if (nonzero)
    return std::to_string(nonzero) + " outputs of " + std::to_string(empty_rows) +
           " fully masked rows are not exactly zero";
  return check_close(got, ref, lim, stats);
}

std::vector<double> first_rows(const std::vector<double>& x, std::int64_t B, std::int64_t S, std::int64_t HD,
                               std::int64_t rows) {
  std::vector<double> out;
  out.reserve(std::size_t(B * rows * HD));
  for (std::int64_t b = 0; b < B; ++b)
    out.insert(out.end(), x.begin() + b * S * HD, x.begin() + (b * S + rows) * HD);
  return out;
}

GoldenAttention load_golden_attention(const SafetensorsFile& f, const std::string& prefix) {
  GoldenAttention g;
  g.q = f.read_f64(prefix + ".q");
  g.k = f.read_f64(prefix + ".k");
  g.v = f.read_f64(prefix + ".v");
  g.out = f.read_f64(prefix + ".out");
  if (f.contains(prefix + ".mask")) g.mask = f.read_f64(prefix + ".mask");
  const auto& qs = f.info(prefix + ".q").shape;
  const auto& ks = f.info(prefix + ".k").shape;
  g.shape = AttentionShape{qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], DType::F32, MaskKind::None};
  return g;
}

std::uint64_t fresh_seed() {
  if (const char* env = std::getenv("DATTN_TEST_SEED"); env && *env) return std::strtoull(env, nullptr, 0);
  std::random_device rd;
  return (std::uint64_t(rd()) << 32) ^ rd();
}

}  // namespace dattn::test
