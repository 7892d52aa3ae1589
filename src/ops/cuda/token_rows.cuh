#pragma once
// The row of params each token uses (TokenModulation::row_of_token, host memory) as the kernels see it.
// Tokens come in long runs of one row (every token of a batch item with a scalar timestep; the first
// frame and the rest with Wan2.2 TI2V), so up to kMaxRuns runs travel in the kernel's arguments: no
// upload and no synchronisation. Longer tables are uploaded once and cached by content in the current
// run context (the same table serves every block of a forward and every step of a run); the table is
// read by kernels on that context's stream.
#include <cstdint>
#include <vector>

#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {

struct TokenRows {
  static constexpr int kMaxRuns = 16;
  const std::int32_t* table = nullptr;  // one row per token on the device, or null: then the runs
  int runs = 0;
  i64 run_start[kMaxRuns];  // first token of each run, increasing, run_start[0] = 0
  std::int32_t run_row[kMaxRuns];

  __device__ __forceinline__ std::int32_t row(i64 token) const {
    if (table) return table[token];
    // Stops at the first run after the token: most calls see 1 or 2 runs (a scan of all kMaxRuns, unrolled,
    // cost every thread of the long-row norms ~80 instructions a row).
    std::int32_t r = run_row[0];
    for (int i = 1; i < runs && token >= run_start[i]; ++i) r = run_row[i];
    return r;
  }
};

// Runs when there are few, else the current context's cached device copy (defined in token_rows.cu).
TokenRows token_rows(const std::vector<std::int32_t>& row_of_token);

}  // namespace dattn::ops::cuda
