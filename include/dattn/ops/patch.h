#pragma once
// Patchify / unpatchify of video latents for DiTs whose patch embedding is a Conv3d with
// kernel = stride = patch (no overlap), and the inverse rearrangement of the output projection.
#include <array>
#include <cstdint>

#include "dattn/core/tensor.h"

namespace dattn::ops {

using Patch3 = std::array<std::int64_t, 3>;  // (t, h, w)

// x [B, C, F, H, W] with F, H, W multiples of the patch; weight [O, C, pt, ph, pw] (a torch Conv3d
// weight); bias [O] or undefined. Returns the tokens [B, S, O], S = (F/pt)(H/ph)(W/pw) in (f, h, w)
// order: Conv3d followed by flatten(2).transpose(1, 2). Computed as one GEMM; x's dtype and device.
Tensor patch_embed_3d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Patch3& patch);

// x [B, S, pt*ph*pw*C] with S = F*H*W tokens of a (F, H, W) grid, each token's features ordered
// (pt, ph, pw, C) -> [B, C, F*pt, H*ph, W*pw] (diffusers' reshape + permute(0, 7, 1, 4, 2, 5, 3, 6)).
Tensor unpatchify_3d(const Tensor& x, const Patch3& grid, const Patch3& patch, std::int64_t channels);

}  // namespace dattn::ops
