#pragma once
// WanRotaryPosEmbed: per-token cos/sin tables over the head dim, split across time, height and width.
#include <array>
#include <cstdint>

#include "dattn/core/tensor.h"

namespace dattn::wan {

struct RopeTables {
  Tensor cos, sin;  // [S, head_dim] float32, S = F'*H'*W' tokens in (f, h, w) order
};

// The head dim is split into (t, h, w) = (D - 4(D/6), 2(D/6), 2(D/6)) columns (D = 64: 24, 20, 20;
// D = 128: 44, 42, 42); each part rotates by its axis's position with frequencies
// theta^(-2k/dim_part), each frequency repeated for the two columns of a pair. Values are computed in
// double and rounded to float32 (diffusers' buffers are float32). Throws UserError when an axis
// exceeds max_seq_len positions.
// (Older diffusers split the columns as (D - 2(D/3), D/3, D/3), which disagrees with the frequency
// parts when D is not a multiple of 6; the reference data, diffusers 0.40, uses the parts above.)
RopeTables rope_tables(std::int64_t head_dim, std::int64_t max_seq_len, const std::array<std::int64_t, 3>& grid,
                       Device device, double theta = 10000.0);

}  // namespace dattn::wan
