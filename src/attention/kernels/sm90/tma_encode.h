#pragma once
// cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda), for the Hopper kernels'
// TMA descriptors. Included by CUDA sources only.
#include <cuda.h>

#include <cstdint>

namespace dattn::hopper_tma {

// A tiled map of a `rank`-D tensor (dims and box innermost first; strides in bytes for dims 1..rank-1),
// no interleave, 256-byte L2 promotion, zero fill out of bounds. Throws std::runtime_error naming `who`.
CUtensorMap encode_tiled(const char* who, CUtensorMapDataType type, int rank, const void* ptr,
                         const std::uint64_t* dims, const std::uint64_t* strides, const std::uint32_t* box,
                         CUtensorMapSwizzle swizzle);

// A [B, S, H, D] 16-bit tensor (D = 64 or 128) as a 4-D map {D, H, S, B}, box {64, 1, rows, 1}, 128B
// swizzle: each box (one 64-column slab) lands in shared memory as `rows` rows x 128 bytes, the layout
// the wgmma descriptors and the TMA-store epilogue expect; D = 128 takes two boxes per tile.
CUtensorMap bshd16_map(const char* who, const void* ptr, std::int64_t batch, std::int64_t seq, std::int64_t heads,
                       std::int64_t D, bool fp16, unsigned rows);

}  // namespace dattn::hopper_tma
