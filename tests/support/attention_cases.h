#pragma once
// Test support for attention backends (in the spirit of llama.cpp's test-backend-ops): random problems
// whose values are exact in the input dtype, output buffers with guard regions and a NaN-poisoned
// payload, and the checks every backend run gets. Depends on dattn_core only (no GoogleTest), so any
// test binary may use it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "dattn/attention/metrics.h"
#include "dattn/attention/problem.h"
#include "dattn/core/dtype.h"
#include "dattn/io/safetensors.h"

namespace dattn::test {

// How a generated case masks keys. EmptyRow gives the last batch item key length 0, so all of its
// query rows are fully masked and must come out as exact zeros.
enum class MaskMode { None, Lengths, KeyMask, EmptyRow };
std::string_view mask_mode_name(MaskMode m);

// n samples of N(mean, stddev) in fp32.
std::vector<float> gaussian(std::size_t n, std::mt19937_64& rng, float mean = 0.0f, float stddev = 1.0f);
// Rounds fp32 values into dtype t (RNE) and returns t's bytes: the values are then exact in t.
std::vector<std::uint8_t> encode_f32(const std::vector<float>& x, DType t);
// Same from doubles (golden data): one rounding, straight to t.
std::vector<std::uint8_t> encode_f64(const std::vector<double>& x, DType t);
std::vector<double> decode(const void* data, DType t, std::size_t n);

// An output buffer: kGuard sentinel bytes, the payload, kGuard sentinel bytes. The payload is poisoned
// with 0xFF bytes, a NaN in fp32, bf16 and fp16, so any element a backend forgets to write shows up
// as non-finite; any write outside the payload changes a guard byte.
class GuardedOutput {
 public:
  static constexpr std::size_t kGuard = 256;
  static constexpr std::uint8_t kSentinel = 0xA5;
  explicit GuardedOutput(std::size_t bytes = 0);
  void* data() { return buf_.data() + kGuard; }
  const void* data() const { return buf_.data() + kGuard; }
  std::size_t bytes() const { return bytes_; }
  std::size_t corrupted_guard_bytes() const;  // 0 when both guards are intact

 private:
  std::vector<std::uint8_t> buf_;
  std::size_t bytes_ = 0;
};

// One problem with the storage its pointers refer to. problem() binds the pointers afresh, so an
// AttentionCase may be moved freely before it is called.
struct AttentionCase {
  AttentionShape shape;
  std::vector<std::uint8_t> q, k, v;
  std::vector<std::int64_t> key_lengths;   // set for Lengths / EmptyRow
  std::vector<std::uint8_t> key_mask;      // [B, Sk] for KeyMask
  std::vector<std::uint8_t> general_mask;  // [B, general_mask_heads, Sq, Sk] boolean, when non-empty
  std::int64_t general_mask_heads = 1;
  std::optional<float> scale;
  GuardedOutput out;
  std::uint64_t seed = 0;

  AttentionProblem problem();
  std::size_t out_numel() const { return std::size_t(shape.batch * shape.seq_q * shape.heads_q * shape.head_dim); }
  std::vector<double> output_f64() const { return decode(out.data(), shape.dtype, out_numel()); }
  // Whether query row (b, i) of head h has at least one key left by key padding, the causal mask and the
  // general mask.
  bool row_has_key(std::int64_t b, std::int64_t h, std::int64_t i) const;
};

// A case of `shape` (its mask field is set from `mode`) with Gaussian q, k, v drawn from `seed`.
// EmptyRow needs batch >= 2 so that some rows are not masked; it raises a batch of 1 to 2.
AttentionCase make_random_case(AttentionShape shape, MaskMode mode, std::uint64_t seed);
// A case from BSHD doubles (golden data) rounded to shape.dtype; no mask.
AttentionCase make_case_from_f64(AttentionShape shape, const std::vector<double>& q, const std::vector<double>& k,
                                 const std::vector<double>& v);
// Allocates c.out for c.shape (guards + poison). make_* call it; call again to reuse a case.
void reset_output(AttentionCase& c);

// Acceptance limits for one comparison.
struct Limits {
  double max_rel_l2 = 0;
  double min_cosine = -1;
  double max_rel_l1 = 1e300;  // unchecked unless set (the lossy backends' bars)
};

// The checks after a run, in order: guards intact; no NaN/Inf in the output (count reported);
// fully masked rows exactly zero; then rel-L2, rel-L1 and cosine against `ref` (B*Sq*Hq*D doubles).
// Returns an empty string on success, else what failed. `stats` receives the comparison.
std::string check_output(const AttentionCase& c, const std::vector<double>& ref, const Limits& lim,
                         ErrorStats* stats = nullptr);
// rel-L2 / rel-L1 / cosine check of a subset (or all) of an output against a reference; "" when within limits.
std::string check_close(const std::vector<double>& got, const std::vector<double>& ref, const Limits& lim,
                        ErrorStats* stats = nullptr);
// Elements of BSHD rows i < rows (per batch item) of a [B, S, H, D] tensor, in order.
std::vector<double> first_rows(const std::vector<double>& x, std::int64_t B, std::int64_t S, std::int64_t HD,
                               std::int64_t rows);

// One attention call recorded from diffusers: `prefix`.{q,k,v,out} in BSHD and, when present,
// `prefix`.mask, all read as doubles; shape.dtype is F32 and shape.mask None (the caller sets both).
struct GoldenAttention {
  AttentionShape shape;
  std::vector<double> q, k, v, out, mask;
};
GoldenAttention load_golden_attention(const SafetensorsFile& file, const std::string& prefix);

// A seed from std::random_device, or from $DATTN_TEST_SEED when set (to replay a failure).
std::uint64_t fresh_seed();

}  // namespace dattn::test
