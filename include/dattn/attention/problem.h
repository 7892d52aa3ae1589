#pragma once
// The attention problem every backend solves: out = softmax(scale * q k^T + mask) v, per batch item
// and head, in BSHD layout (batch, sequence, heads, head dim), all four tensors contiguous.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dattn/core/dtype.h"

namespace dattn {

// Which masks a problem carries. Key padding hides keys per batch item; a general mask is the
// [B, 1 or H, Sq, Sk] boolean or additive mask that only TORCH_SDPA accepts. Causal: query i sees keys
// j <= i (torch SDPA's is_causal), plus key padding when the problem carries it (a right-padded causal
// encoder such as Qwen's); it needs seq_q == seq_k, where torch's top-left and flash-attn's bottom-right
// conventions agree (an Sq != Sk causal problem is refused rather than silently picking one). Backends
// apply it natively, never as a dense mask; only FLASH_ATTN and TORCH_SDPA accept it.
enum class MaskKind { None, KeyPadding, General, Causal };

// The data-free description of a problem: what a support predicate and a model build look at.
struct AttentionShape {
  std::int64_t batch = 1;
  std::int64_t seq_q = 0;
  std::int64_t seq_k = 0;
  std::int64_t heads_q = 0;
  std::int64_t heads_kv = 0;  // divides heads_q (grouped-query attention when smaller)
  std::int64_t head_dim = 0;
  DType dtype = DType::F32;
  MaskKind mask = MaskKind::None;

  bool causal() const { return mask == MaskKind::Causal; }
  // Throws UserError naming the first field that is out of range.
  void validate() const;
  // "B=1 Sq=72 Sk=72 Hq=2 Hkv=2 D=64 bf16 key-padding" for messages.
  std::string describe() const;
  // 4 * B * Hq * Sq * Sk * D: the conventional FLOP count of one attention call; half of it when causal
  // (FlashAttention's convention for the work a causal kernel does).
  double flops() const;
};

enum class GeneralMaskType { Boolean, Additive };

// A general mask [B, mask_heads, Sq, Sk]. Boolean: uint8, nonzero means the key takes part (torch's
// convention). Additive: float32 added to the scaled scores (-inf hides a key).
struct GeneralMask {
  GeneralMaskType type = GeneralMaskType::Boolean;
  const void* data = nullptr;
  std::int64_t heads = 1;  // 1 (broadcast over heads) or heads_q
};

struct AttentionProblem {
  AttentionShape shape;
  const void* q = nullptr;  // [B, Sq, Hq, D]
  const void* k = nullptr;  // [B, Sk, Hkv, D]
  const void* v = nullptr;  // [B, Sk, Hkv, D]
  void* out = nullptr;      // [B, Sq, Hq, D], same dtype as the inputs
  std::optional<float> scale;  // softmax scale; default 1/sqrt(D)

  // Key padding, at most one of the two: valid key count per batch item (the first n keys take part),
  // or a boolean [B, Sk] mask (uint8, nonzero = valid).
  std::vector<std::int64_t> key_lengths;
  const std::uint8_t* key_mask = nullptr;

  std::optional<GeneralMask> mask;

  // On Device::CUDA every data pointer above (q, k, v, out, key_mask, mask data) is device memory and
  // `stream` is the cudaStream_t to run on (nullptr: the current run context's stream, never the legacy
  // default stream); key_lengths stays on the host.
  void* stream = nullptr;

  float softmax_scale() const;
  bool has_key_padding() const { return !key_lengths.empty() || key_mask != nullptr; }
  // Whether key j of batch item b takes part under key padding (general masks are not included).
  bool key_valid(std::int64_t b, std::int64_t j) const;
  // Whether query i may see key j under the causal mask (always true for other mask kinds).
  bool causal_visible(std::int64_t i, std::int64_t j) const { return !shape.causal() || j <= i; }
  // Checks shape, pointers, mask fields and that shape.mask agrees with the masks present (Causal goes
  // with or without key padding, never with a general mask).
  void validate() const;
};

}  // namespace dattn
