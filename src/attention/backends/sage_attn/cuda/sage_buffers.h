#pragma once
// The quantized operands of one SAGE_ATTN call on CUDA, as the quantization pass (sage_quant.cu) writes
// them and both attention kernels (portable and Hopper) read them. Device memory, laid out so that the
// Hopper kernel can load whole 128-row tiles with TMA: every sequence is padded to a multiple of 128
// with zeros, heads are outermost. Plain C++ (no CUDA types): shared by host and device code.
#include <cstdint>

namespace dattn::sage::cuda_impl {

inline constexpr int kTileRows = 128;  // sequence padding: the Hopper kernel's query and key tiles

struct SageBuffers {
  int batch = 0, heads_q = 0, heads_kv = 0, head_dim = 0;
  int seq_q = 0, seq_k = 0, seq_q_pad = 0, seq_k_pad = 0;
  std::int8_t* q8 = nullptr;   // [B * Hq][Sq_pad][D]: q * scale * log2(e), INT8 per 16-row block
  float* q_scale = nullptr;    // [B * Hq][Sq_pad / 16]
  std::int8_t* k8 = nullptr;   // [B * Hkv][Sk_pad][D]: K minus its channel mean, INT8 per 64-key block
  float* k_scale = nullptr;    // [B * Hkv][Sk_pad / 64]
  std::uint8_t* v8t = nullptr;  // [B * Hkv][D][Sk_pad]: V^T in e4m3, keys permuted within groups of 16
  float* v_scale = nullptr;    // [B * Hkv][D]: per-channel amax / 448 (1 when 0)
  const int* kv_len = nullptr;  // [B]: valid keys (the first kv_len[b] keys, min(length, Sk))
  const std::uint8_t* key_mask = nullptr;  // [B, Sk] nonzero = valid, or null (then kv_len decides)
  // NaN and Inf, taken out of the operands (as 0) by the quantization pass and put back into the output
  // by sage_put_back_nonfinite (docs/backend-semantics.md, SAGE_ATTN, "Non-finite inputs").
  std::uint8_t* q_bad = nullptr;   // [B * Hq][Sq_pad]: 1 where the query row held NaN/Inf (written for every row)
  unsigned* kv_flags = nullptr;    // [B * Hkv]: kKeyBad | kValueBad | kNoValidKey (zeroed per call)
  std::uint8_t* v_bad = nullptr;   // [B * Hkv][D]: 1 where a valid value held NaN/Inf in that channel (zeroed)
  unsigned* any_bad = nullptr;     // nonzero when any query, key or value held NaN/Inf (zeroed)
};

inline constexpr unsigned kKeyBad = 1, kValueBad = 2, kNoValidKey = 4;

// Position, within a group of 16 keys of V^T, of key p (0..15) of that group. The Hopper kernel feeds P
// to the FP8 wgmma straight from its score accumulators, whose per-thread columns (2t, 2t+1, 8+2t, 8+2t+1)
// differ from the register-A layout of an 8-bit MMA (4t .. 4t+3); storing V's keys in this order makes
// the two agree without shuffles. The portable kernel undoes it when it reads V.
inline constexpr int v_key_position(int p) { return 4 * ((p % 8) / 2) + 2 * (p / 8) + (p % 2); }
// The inverse: the key stored at position `pos` (0..15) of a group.
inline constexpr int v_position_key(int pos) { return 8 * ((pos % 4) / 2) + 2 * (pos / 4) + (pos % 2); }

}  // namespace dattn::sage::cuda_impl
