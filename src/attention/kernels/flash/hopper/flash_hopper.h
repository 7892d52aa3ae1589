#pragma once
// FLASH_ATTN on Hopper (sm_90a): a FlashAttention-3 style forward kernel (TMA, mbarrier pipeline,
// warp-specialised producer/consumer warpgroups, wgmma). Plain C++ header for host code; compiled
// only in CUDA builds (flash_hopper_launch.cu). The portable launcher (flash_attention_cuda) hands
// the problems it accepts to it on compute capability 9.0.
// The `kernel` extra of FLASH_ATTN (kernel_choice.h) decides whether it is used; hopper_tuning.h holds
// the knobs benchmarks compare.
#include "attention/kernels/kernel_choice.h"
#include "dattn/attention/problem.h"

namespace dattn::flash {

// Whether the Hopper kernel runs `shape` on a device of compute capability `cc` (major*10+minor):
// cc 9.x, bf16/fp16, head dim 64 or 128, no general mask; any Sq/Sk, GQA, key padding, causal.
bool flash_hopper_supports(const AttentionShape& shape, int cc);

// Whether flash_attention_cuda should run `problem` with the Hopper kernel on the current device:
// the shape is supported, key padding (if any) is given as lengths (not a boolean key mask), the
// scale is positive and the pointers are 16-byte aligned. `choice` Portable: never; Hopper: required
// (UserError naming the problem when it cannot run it).
bool flash_hopper_handles(const AttentionProblem& problem, KernelChoice choice);

// Block-sparse work (SPARSE_BLOCK): per work tile of 128 query rows, row r = (b * Hq + h) *
// ceil(Sq / 128) + m_block, counts[r] key-tile entries at entries[r * stride ...] in ascending tile
// order, each a 128-key tile index with the 64-key halves hidden per consumer warpgroup (hopper::
// KeyTileEntry in flash_hopper_config.cuh). Device memory.
struct HopperTileLists {
  const int* entries = nullptr;
  const int* counts = nullptr;
  int stride = 0;
  bool hidden_halves = false;  // entries hide 64-key halves (64-row blocks); false: every bit is 0
};

// Runs a validated problem that flash_hopper_supports accepted; device pointers, asynchronous on
// problem.stream. With `lists`, only the listed key tiles (exact attention over their unhidden keys).
// Throws std::runtime_error on a CUDA or driver failure.
void flash_attention_hopper(const AttentionProblem& problem, const HopperTileLists* lists = nullptr);

}  // namespace dattn::flash
