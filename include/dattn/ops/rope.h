#pragma once
// Rotary position embedding: on interleaved pairs, as diffusers' Wan attention applies it, and in the
// rotate-half form of transformers' language models.
#include "dattn/core/tensor.h"

namespace dattn::ops {

// x [B, S, H, D] (D even); cos, sin [S, D] float32 tables, the same for every batch item and head.
// For each pair (x1, x2) = (x[2i], x[2i+1]), with c = cos[s, 2i] and s = sin[s, 2i+1]:
//   y[2i] = x1 c - x2 s,   y[2i+1] = x1 s + x2 c.
// (diffusers reads cos at even and sin at odd columns of tables whose pairs repeat one value; the op
// reads them the same way, so any table, even one whose pairs differ, gives diffusers' result.)
// y has x's shape, device and dtype; computed in float32.
Tensor apply_rope_interleaved(const Tensor& x, const Tensor& cos, const Tensor& sin);

// Rotary position embedding in the rotate-half form (transformers' Llama / Qwen2 `apply_rotary_pos_emb`):
// y = x * cos + rotate_half(x) * sin, where rotate_half(x) = [-x[D/2:], x[:D/2]]. x [B, S, H, D] (D even);
// cos, sin [S, D] float32 (transformers' tables repeat their D/2 frequencies in both halves; any table is
// read as given). y has x's shape, device and dtype; computed in float32.
Tensor apply_rope_rotate_half(const Tensor& x, const Tensor& cos, const Tensor& sin);

}  // namespace dattn::ops
