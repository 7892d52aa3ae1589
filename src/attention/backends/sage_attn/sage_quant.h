#pragma once
// SAGE_ATTN's quantization steps (docs/backend-semantics.md, SAGE_ATTN steps 1-3 and 5), one public
// function per step so that tests and a CUDA kernel's element-by-element check can reproduce each one.
// All functions work on one (batch item, head) at a time, as contiguous fp32 row-major [rows, D].
#include <cstdint>
#include <vector>

namespace dattn::sage {

// The scheme's constants; the CPU code, the tests and a CUDA kernel all take them from here.
inline constexpr std::int64_t kQBlock = 16;   // query rows per INT8 scale (one warp's rows in wgmma)
inline constexpr std::int64_t kKBlock = 64;   // keys per INT8 scale
inline constexpr std::int64_t kKvTile = 128;  // keys per online-softmax step
inline constexpr float kInt8Max = 127.0f;     // symmetric INT8 range [-127, 127]
inline constexpr float kE4m3Max = 448.0f;     // largest finite fp8 e4m3 value
inline constexpr float kPScale = kE4m3Max;    // p in [0, 1] is stored as e4m3(p * 448)
inline constexpr float kLog2e = 1.44269504088896340736f;

// A per-key validity vector: valid[j] != 0 when key j takes part. An empty vector means all valid.
using KeyValid = std::vector<std::uint8_t>;
inline bool is_valid(const KeyValid& valid, std::int64_t j) { return valid.empty() || valid[j] != 0; }

// Step 1. Subtracts from every valid key the per-channel mean over the valid keys (fp32 sum in key
// order, divided by the count) and sets invalid keys to 0, in place. k is [n, d]. Returns the mean
// (all zeros when no key is valid).
std::vector<float> smooth_k(float* k, std::int64_t n, std::int64_t d, const KeyValid& valid);

// Step 2. The fp32 factor scale * log2(e) that is folded into q, so that scores are in base 2.
float q_fold_factor(float softmax_scale);
// q[i] *= q_fold_factor(softmax_scale) for the n values of q, in place.
void fold_q_scale(float* q, std::int64_t n, float softmax_scale);

// Step 3, one value: rne(x * inv) clamped to [-127, 127], where inv = 127 / amax of x's block.
std::int8_t quantize_int8(float x, float inv);

// INT8 blocks of `block_rows` consecutive rows (all d channels); the last block may be shorter.
struct Int8Blocks {
  std::int64_t rows = 0, dim = 0, block_rows = 0;
  std::vector<std::int8_t> data;  // [rows, dim]
  std::vector<float> scale;       // [ceil(rows / block_rows)]: amax / 127, or 0 for an all-zero block
  float row_scale(std::int64_t row) const { return scale[row / block_rows]; }
};

// Step 3. Quantizes x [rows, d] with one scale per block of `block_rows` rows. A block whose amax is 0,
// or so small that 127 / amax is not finite, gets scale 0 and all-zero data.
Int8Blocks quantize_int8_blocks(const float* x, std::int64_t rows, std::int64_t d, std::int64_t block_rows);

// Step 5. V in fp8 e4m3 with one scale per channel over the valid keys.
struct Fp8Channels {
  std::int64_t rows = 0, dim = 0;
  std::vector<std::uint8_t> data;  // [rows, dim] e4m3 bits; invalid keys are 0
  std::vector<float> scale;        // [dim]: amax_d / 448, or 1 when that is 0
};

// sv[d] = amax_d / 448 over the valid keys (1 when that is 0); v8[j, d] = e4m3(v[j, d] / sv[d]),
// rounded to nearest even and saturating. Invalid keys are stored as 0, so padding never reaches P.V.
Fp8Channels quantize_v_e4m3(const float* v, std::int64_t n, std::int64_t d, const KeyValid& valid);

}  // namespace dattn::sage
