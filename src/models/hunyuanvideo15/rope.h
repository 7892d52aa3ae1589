#pragma once
// HunyuanVideo15RotaryPosEmbed: per-token cos/sin tables over the head dim, the (t, h, w) axes taking
// rope_axes_dim columns each, applied to the video tokens only (interleaved pairs).
#include <array>
#include <cstdint>

#include "dattn/core/tensor.h"

namespace dattn::hv15 {

struct RopeTables {
  Tensor cos, sin;  // [S, head_dim] float32, S = F'*H'*W' tokens in (f, h, w) order
};

// Axis i rotates by the token's position along it with frequencies theta^(-2k / axes[i]), each repeated
// for the two columns of a pair; computed in float32 step by step as diffusers does (its tables are
// float32 throughout).
RopeTables rope_tables(const std::array<std::int64_t, 3>& axes, const std::array<std::int64_t, 3>& grid, double theta,
                       Device device);

}  // namespace dattn::hv15
