#pragma once
// Tuning knobs of the Hopper attention kernels (FLASH_ATTN's, which SPARSE_BLOCK also walks its kept
// tiles with, and SAGE_ATTN's) that only benchmarks and kernel comparisons change: no user-facing extra, no environment variable.
// Process-wide plain settings (no CUDA state); set them before launching the work they should affect.
// Header-only: the CUDA library reads them and the benchmarks set them, whichever library links first.
#include <mutex>
#include <string>

#include "dattn/core/error.h"

namespace dattn::flash {

struct HopperTuning {
  // Ping-pong scheduling of the two consumer warpgroups. On an H200 it measured ~1% faster at B=2
  // S=4096 H=24 and ~5% at S=2048; at S=11440 both variants spread over 590-675 TFLOP/s between runs.
  bool pingpong = true;
  // One persistent CTA per SM (true) or one CTA per work tile (false, the classic grid).
  bool persistent_grid = true;
  // How far (log2 units, 0 to 15) a row max may grow before the output accumulator is rescaled (0: on
  // every growth, the classic online softmax).
  float rescale_threshold = 8.f;
  // Sparse walks launched dependent on the kernel before them (the mask estimator's select), so their
  // launch and set-up overlap its tail (programmatic dependent launch). On an H200, SPARSE_BLOCK d = 0.1
  // (mask + kernel), 3 alternating rounds: wan22_5b_self 0.371 / 0.365 / 0.376 ms against 0.375 /
  // 0.388 / 0.370 without; flux_joint 0.107 / 0.106 / 0.108 against 0.108 / 0.107 / 0.108.
  bool sparse_dependent_launch = true;
  // Ping-pong consumer warpgroups in SAGE_ATTN's Hopper kernel. With l summed by the tensor core, on an
  // H200 (3 alternating rounds): head dim 128 equal within noise (wan22_5b_self 2.120-2.179 ms off,
  // 2.146-2.178 on), head dim 64 5% faster off (hd64 4.31-4.37 against 4.59-4.62).
  bool sage_pingpong = false;
};

namespace detail {
struct HopperTuningSetting {
  std::mutex mutex;
  HopperTuning value;
};
inline HopperTuningSetting& hopper_tuning_setting() {
  static HopperTuningSetting s;  // one for the program (an inline function's static)
  return s;
}
}  // namespace detail

// The knobs in force (the defaults above until set_hopper_tuning); read per launch.
inline HopperTuning hopper_tuning() {
  auto& s = detail::hopper_tuning_setting();
  const std::lock_guard<std::mutex> lock(s.mutex);
  return s.value;
}

// Replaces them; UserError naming the value when rescale_threshold is outside [0, 15].
inline void set_hopper_tuning(const HopperTuning& tuning) {
  if (!(tuning.rescale_threshold >= 0.f && tuning.rescale_threshold <= 15.f))
    throw UserError("FLASH_ATTN hopper tuning: rescale_threshold " + std::to_string(tuning.rescale_threshold) +
                    " is outside [0, 15]");
  auto& s = detail::hopper_tuning_setting();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.value = tuning;
}

}  // namespace dattn::flash
