#include "dattn/attention/problem.h"

#include <cmath>
#include <string>

#include "dattn/core/checked_math.h"
#include "dattn/core/error.h"

namespace dattn {
namespace {

void require_positive(const char* field, std::int64_t value) {
  if (value <= 0)
    throw UserError("attention problem: " + std::string(field) + " = " + std::to_string(value) +
                    ", expected a positive number");
}

const char* mask_name(MaskKind m) {
  switch (m) {
    case MaskKind::None: return "no-mask";
    case MaskKind::KeyPadding: return "key-padding";
    case MaskKind::General: return "general-mask";
    case MaskKind::Causal: return "causal";
  }
  return "?";
}

}  // namespace

void AttentionShape::validate() const {
  require_positive("batch", batch);
  require_positive("seq_q", seq_q);
  require_positive("seq_k", seq_k);
  require_positive("heads_q", heads_q);
  require_positive("heads_kv", heads_kv);
  require_positive("head_dim", head_dim);
  if (heads_q % heads_kv != 0)
    throw UserError("attention problem: heads_q = " + std::to_string(heads_q) + " is not a multiple of heads_kv = " +
                    std::to_string(heads_kv) + "; k/v heads must divide q heads");
  // Every backend and the float64 reference index q/out and k/v with 64-bit sizes: their element
  // counts, as float64 bytes, must fit (65536^5 elements wrapped around and crashed).
  if (!product_if_fits({batch, seq_q, heads_q, head_dim, 8}) || !product_if_fits({batch, seq_k, heads_kv, head_dim, 8}))
    throw UserError("attention problem " + describe() + ": q or k/v has more than 2^60 elements (the size overflows)");
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16 && dtype != DType::F64)
    throw UserError("attention problem: dtype " + std::string(dtype_name(dtype)) +
                    " is not an attention input type; expected fp32, bf16, fp16 or fp64");
  if (mask == MaskKind::Causal && seq_q != seq_k)
    throw UserError("attention problem: causal mask with seq_q = " + std::to_string(seq_q) + " != seq_k = " +
                    std::to_string(seq_k) + "; causal attention needs equal query and key lengths");
}

std::string AttentionShape::describe() const {
  return "B=" + std::to_string(batch) + " Sq=" + std::to_string(seq_q) + " Sk=" + std::to_string(seq_k) +
         " Hq=" + std::to_string(heads_q) + " Hkv=" + std::to_string(heads_kv) + " D=" + std::to_string(head_dim) +
         " " + std::string(dtype_name(dtype)) + " " + mask_name(mask);
}

double AttentionShape::flops() const {
  const double full = 4.0 * double(batch) * double(heads_q) * double(seq_q) * double(seq_k) * double(head_dim);
  return mask == MaskKind::Causal ? full / 2 : full;
}

float AttentionProblem::softmax_scale() const {
  return scale ? *scale : 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
}

bool AttentionProblem::key_valid(std::int64_t b, std::int64_t j) const {
  if (!key_lengths.empty()) return j < key_lengths[b];
  if (key_mask) return key_mask[b * shape.seq_k + j] != 0;
  return true;
}

void AttentionProblem::validate() const {
  shape.validate();
  if (!q || !k || !v || !out) throw UserError("attention problem: q, k, v and out must all be set");
  if (scale && !std::isfinite(*scale))
    throw UserError("attention problem: softmax scale " + std::to_string(*scale) + " is not finite");
  if (!key_lengths.empty() && key_mask)
    throw UserError("attention problem: give key padding as key_lengths or key_mask, not both");
  if (!key_lengths.empty()) {
    if (static_cast<std::int64_t>(key_lengths.size()) != shape.batch)
      throw UserError("attention problem: key_lengths has " + std::to_string(key_lengths.size()) +
                      " entries, expected one per batch item (" + std::to_string(shape.batch) + ")");
    for (std::size_t b = 0; b < key_lengths.size(); ++b)
      if (key_lengths[b] < 0 || key_lengths[b] > shape.seq_k)
        throw UserError("attention problem: key_lengths[" + std::to_string(b) + "] = " +
                        std::to_string(key_lengths[b]) + ", expected 0.." + std::to_string(shape.seq_k));
  }
  if (mask) {
    if (!mask->data) throw UserError("attention problem: general mask has no data");
    if (mask->heads != 1 && mask->heads != shape.heads_q)
      throw UserError("attention problem: general mask has " + std::to_string(mask->heads) +
                      " heads, expected 1 or heads_q = " + std::to_string(shape.heads_q));
  }
  if (shape.mask == MaskKind::Causal) {
    if (mask) throw UserError("attention problem: a causal mask cannot be combined with a general mask");
    return;  // causal, with or without key padding
  }
  const MaskKind expected = mask ? MaskKind::General : has_key_padding() ? MaskKind::KeyPadding : MaskKind::None;
  // A general mask may come with key padding; both then apply.
  if (shape.mask != expected)
    throw UserError(std::string("attention problem: shape says ") + mask_name(shape.mask) +
                    " but the masks given make it " + mask_name(expected));
}

}  // namespace dattn
