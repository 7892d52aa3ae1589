#include "support/nonfinite_cases.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "support/matrix_limits.h"

namespace dattn::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// A finite output poison (0x3C3C... is about 0.0115 in fp32, bf16 and fp16): an element the backend
// forgets to write can then not pass for an expected NaN.
constexpr std::uint8_t kFinitePoison = 0x3C;

// Sets element `index` of a tensor stored as `t` bytes to `value`.
void poke(std::vector<std::uint8_t>& bytes, DType t, std::size_t index, double value) {
  std::vector<double> x = decode(bytes.data(), t, bytes.size() / dtype_size(t));
  x.at(index) = value;
  bytes = encode_f64(x, t);
}

std::size_t bshd(const AttentionShape& s, std::int64_t b, std::int64_t seq, std::int64_t pos, std::int64_t heads,
                 std::int64_t h, std::int64_t d) {
  return std::size_t(((b * seq + pos) * heads + h) * s.head_dim + d);
}

struct Poison {
  const char* name;
  MaskMode mode;
  bool inf_key;  // the one case where SAGE_ATTN may be non-finite beyond the reference
  bool reaches_output;  // false: the reference stays finite (the poison is hidden by the mask)
  std::function<void(AttentionCase&)> apply;
};

// Batch 2, GQA (4 query heads on 2 kv heads), key padding with a different length per item, so that a
// value must reach only its own item and kv group.
std::vector<Poison> poisons() {
  return {
      {"NaN in one q element (b 0, row 5, head 1)", MaskMode::Lengths, false, true,
       [](AttentionCase& c) { poke(c.q, c.shape.dtype, bshd(c.shape, 0, c.shape.seq_q, 5, c.shape.heads_q, 1, 3), kNaN); }},
      {"NaN in one valid key (b 0, key 7, kv head 0)", MaskMode::Lengths, false, true,
       [](AttentionCase& c) { poke(c.k, c.shape.dtype, bshd(c.shape, 0, c.shape.seq_k, 7, c.shape.heads_kv, 0, 0), kNaN); }},
      {"NaN in one valid value (b 1, key 2, kv head 1, channel 9)", MaskMode::Lengths, false, true,
       [](AttentionCase& c) { poke(c.v, c.shape.dtype, bshd(c.shape, 1, c.shape.seq_k, 2, c.shape.heads_kv, 1, 9), kNaN); }},
      {"+Inf in one valid key (b 1, key 4, kv head 0)", MaskMode::Lengths, true, true,
       [](AttentionCase& c) { poke(c.k, c.shape.dtype, bshd(c.shape, 1, c.shape.seq_k, 4, c.shape.heads_kv, 0, 1), kInf); }},
      {"NaN in K and V of padding keys", MaskMode::Lengths, false, false,
       [](AttentionCase& c) {
         for (std::int64_t b = 0; b < c.shape.batch; ++b) {
           const std::int64_t j = c.key_lengths[std::size_t(b)];  // the first hidden key
           for (std::int64_t d = 0; d < c.shape.head_dim; ++d) {
             poke(c.k, c.shape.dtype, bshd(c.shape, b, c.shape.seq_k, j, c.shape.heads_kv, 0, d), kNaN);
             poke(c.v, c.shape.dtype, bshd(c.shape, b, c.shape.seq_k, j, c.shape.heads_kv, 1, d), kNaN);
           }
         }
       }},
      {"NaN query row of a fully masked item (b 1 has no key)", MaskMode::EmptyRow, false, false,
       [](AttentionCase& c) {
         for (std::int64_t d = 0; d < c.shape.head_dim; ++d)
           poke(c.q, c.shape.dtype, bshd(c.shape, 1, c.shape.seq_q, 3, c.shape.heads_q, 2, d), kNaN);
       }},
  };
}

// "" when `got` is non-finite exactly where `ref` is (or, with superset, at least there) and close to it
// elsewhere.
std::string check_pattern(const AttentionCase& c, const std::vector<double>& got, const std::vector<double>& ref,
                          const Limits& lim, bool superset, bool reaches_output) {
  if (std::size_t bad = c.out.corrupted_guard_bytes()) return std::to_string(bad) + " guard bytes were overwritten";
  if (got.size() != ref.size()) return "size mismatch";
  std::size_t ref_bad = 0, missed = 0, extra = 0;
  std::size_t first_missed = 0, first_extra = 0;
  std::vector<double> g, r;  // the elements finite in both
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool rb = !std::isfinite(ref[i]), gb = !std::isfinite(got[i]);
    ref_bad += rb;
    if (rb && !gb && missed++ == 0) first_missed = i;
    if (!rb && gb && extra++ == 0) first_extra = i;
    if (!rb && !gb) g.push_back(got[i]), r.push_back(ref[i]);
  }
  const std::int64_t D = c.shape.head_dim;
  std::string why;
  if ((ref_bad > 0) != reaches_output)
    why += reaches_output ? "the case is wrong: the reference has no NaN/Inf; " : "the reference is not finite; ";
  std::size_t nonzero = 0;  // fully masked rows are exact zeros, whatever their query holds
  const auto& s = c.shape;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t i = 0; i < s.seq_q; ++i)
      for (std::int64_t hq = 0; hq < s.heads_q; ++hq)
        if (!c.row_has_key(b, hq, i))
          for (std::int64_t d = 0; d < D; ++d) nonzero += got[bshd(s, b, s.seq_q, i, s.heads_q, hq, d)] != 0.0;
  if (nonzero) why += std::to_string(nonzero) + " outputs of fully masked rows are not exactly zero; ";
  if (missed)
    why += std::to_string(missed) + " of " + std::to_string(ref_bad) +
           " elements that are NaN/Inf in the reference are finite (first: row " + std::to_string(first_missed / D) +
           ", channel " + std::to_string(first_missed % D) + "; the NaN was hidden); ";
  if (extra && !superset)
    why += std::to_string(extra) + " elements finite in the reference are NaN/Inf (first: row " +
           std::to_string(first_extra / D) + ", channel " + std::to_string(first_extra % D) + "); ";
  if (!g.empty())
    if (std::string close = check_close(g, r, lim); !close.empty()) why += "finite part: " + close;
  return why;
}

}  // namespace

int run_nonfinite_cases(MatrixHarness& h, const AttentionBackend& be, const nlohmann::json& extra,
                        const ReferenceOf& reference_of, const std::string& what, const NonfiniteOptions& opt) {
  int ran = 0;
  for (const Poison& poison : poisons())
    for (std::int64_t D : {64, 128})
      for (DType dt : kMatrixDTypes) {
        if (!opt.values && std::strstr(poison.name, "valid value")) continue;
        const AttentionShape shape{2, opt.causal ? 150 : 80, opt.causal ? 150 : 112, 4, 2, D, dt, MaskKind::None};
        AttentionCase c = make_random_case(shape, poison.mode, fresh_seed());
        if (opt.causal) c.shape.mask = MaskKind::Causal;  // key padding stays
        const std::string label =
            h.label(be, c.shape, std::string(poison.name) + (opt.causal ? " causal " : " ") + what);
        SCOPED_TRACE(label);
        if (!h.check_support(be, c.shape)) continue;
        ++ran;
        poison.apply(c);
        const std::vector<double> ref = reference_of(c);
        Tally& t = h.report()[be.name()];
        const std::string err = h.run(be, c, extra, kFinitePoison);
        const std::string replay = " [seed " + std::to_string(c.seed) + "; replay with DATTN_TEST_SEED]";
        if (!err.empty()) {
          ++t.failed;
          ADD_FAILURE() << label << ": " << err << replay;
          continue;
        }
        const bool superset = poison.inf_key && is(be, "SAGE_ATTN");
        const std::string why =
            check_pattern(c, c.output_f64(), ref, h.limits_for(be, dt), superset, poison.reaches_output);
        if (why.empty()) {
          ++t.passed;
        } else {
          ++t.failed;
          ADD_FAILURE() << label << ": " << why << replay;
        }
      }
  return ran;
}

}  // namespace dattn::test
