#pragma once
// Exact attention on the CPU with the tiled online softmax (the FlashAttention algorithm), fp32 math.
// One core serves FLASH_ATTN (every key block) and SPARSE_BLOCK (only the key blocks its mask keeps).
#include <cstdint>
#include <vector>

#include "dattn/attention/problem.h"

namespace dattn::flash {

inline constexpr std::int64_t kQueryBlock = 64;  // query rows per task (FLASH_ATTN)
inline constexpr std::int64_t kKeyBlock = 64;    // keys per online-softmax step (FLASH_ATTN)

// Key block indices (in units of FlashTiling::key_block) that one query block visits, in that order.
using KeyBlockList = std::vector<std::int32_t>;

struct FlashTiling {
  std::int64_t query_block = kQueryBlock;
  std::int64_t key_block = kKeyBlock;
  // Optional restriction, one list per (b, query head h, query block qb) at index
  // (b * heads_q + h) * query_blocks + qb. nullptr: every key block, in ascending order.
  const std::vector<KeyBlockList>* key_blocks = nullptr;
};

// ceil(n / block): the number of blocks covering n rows.
inline std::int64_t block_count(std::int64_t n, std::int64_t block) { return (n + block - 1) / block; }

// out = softmax(scale * q k^T) v per (b, h) over the valid keys of the visited key blocks (key padding
// and the causal mask apply, key blocks past the diagonal are skipped; general masks do not). A query
// row with no valid visited key gets zeros. Inputs fp32, bf16, fp16 or fp64 (converted exactly to
// fp32); the fp32 result is rounded once to the output dtype. Parallel (OpenMP) over batch x query
// heads x query blocks.
void flash_attention_cpu(const AttentionProblem& problem, const FlashTiling& tiling = {});

}  // namespace dattn::flash
