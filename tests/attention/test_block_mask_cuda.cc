// SPARSE_BLOCK's block mask on CUDA (cuda/block_mask_cuda.cu) against the CPU's estimate_block_mask on
// the same inputs: the same kept blocks in the same mask order, row by row, for every option set, plus
// the ascending lists and counts that the attention kernels read. Fresh seeds each run (replay one with
// DATTN_TEST_SEED). Skips without a CUDA build or device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "attention/backends/sparse_block/block_mask.h"
#include "attention/backends/sparse_block/cuda_entry.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/dtype.h"
#include "dattn/core/error.h"
#include "support/attention_cases.h"
#include "support/device_case.h"
#ifdef DATTN_WITH_CUDA
#include "attention/backends/sparse_block/cuda/block_mask_cuda.h"
#endif

namespace dattn::sparse {
namespace {

using test::AttentionCase;
using test::MaskMode;

BlockMaskOptions make_options(std::int64_t bs, std::optional<double> density, std::optional<double> cdf,
                              bool diagonal) {
  BlockMaskOptions o;
  o.block_size = bs;
  o.density = density;
  o.cdf_threshold = cdf;
  o.keep_diagonal = diagonal;
  return o;
}

// Densities 1, 0.5, 0.25, 0.1 and the default; cdf 0.9 alone and with density 0.5; diagonal on and off.
std::vector<BlockMaskOptions> option_sets(std::int64_t bs) {
  std::vector<BlockMaskOptions> sets;
  for (const bool diagonal : {true, false}) {
    for (const std::optional<double> d : {std::optional<double>(1.0), {0.5}, {0.25}, {0.1}, {}})
      sets.push_back(make_options(bs, d, {}, diagonal));
    sets.push_back(make_options(bs, {}, 0.9, diagonal));
    sets.push_back(make_options(bs, 0.5, 0.9, diagonal));
  }
  return sets;
}

std::string describe(const BlockMaskOptions& o) {
  auto opt = [](const std::optional<double>& v) { return v ? std::to_string(*v) : std::string("-"); };
  return "bs=" + std::to_string(o.block_size) + " density=" + opt(o.density) + " cdf=" + opt(o.cdf_threshold) +
         " diagonal=" + (o.keep_diagonal ? "1" : "0");
}

std::string list(const std::vector<std::int32_t>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

// The mask's kernel paths (block_mask_cuda.h): each must give the CPU's mask. 0 is the default path.
constexpr int kKernelPaths = 2;

std::string path_name(int path) {
  static const char* const names[kKernelPaths] = {"fastest", "general"};
  return names[path];
}

// The GPU mask from kernel path `path`, rows in mask order. Also checks the device view against it:
// each row's count and its kept blocks ascending.
BlockMask gpu_mask(const AttentionProblem& p, const BlockMaskOptions& o, int path = 0) {
#ifdef DATTN_WITH_CUDA
  const MaskKernels kernels[kKernelPaths] = {MaskKernels::kFastest, MaskKernels::kGeneral};
  const DeviceBlockMask dm = estimate_block_mask_cuda(p, o, /*with_mask_order=*/true, kernels[path]);
  BlockMask m = download_block_mask(dm);
  const DeviceKeyBlocks view = dm.view();
  EXPECT_EQ(view.block_size, o.block_size);
  EXPECT_EQ(view.query_blocks, m.query_blocks);
  EXPECT_EQ(view.key_blocks, m.key_blocks);
  std::vector<int> counts(m.kept.size()), blocks(m.kept.size() * m.key_blocks);
  copy_bytes(counts.data(), view.counts, counts.size() * sizeof(int));
  copy_bytes(blocks.data(), view.blocks, blocks.size() * sizeof(int));
  std::size_t bad = 0;
  for (std::size_t r = 0; r < m.kept.size(); ++r) {
    std::vector<std::int32_t> sorted = m.kept[r];
    std::sort(sorted.begin(), sorted.end());
    const auto row = blocks.begin() + r * m.key_blocks;
    bad += counts[r] != static_cast<int>(sorted.size()) || !std::equal(sorted.begin(), sorted.end(), row);
  }
  EXPECT_EQ(bad, 0u) << "rows whose ascending device list differs from the mask order's blocks, " << describe(o)
                     << " path " << path_name(path);
  return m;
#else
  (void)path;
  return estimate_block_mask_cuda_entry(p, o);
#endif
}

// CPU and GPU masks of c for every option set and kernel path; prints the first mismatching rows of each.
void expect_same_masks(AttentionCase& c, std::int64_t bs, const std::string& what) {
  SCOPED_TRACE(what + " " + c.shape.describe() + " seed " + std::to_string(c.seed) +
               " (replay: DATTN_TEST_SEED=" + std::to_string(c.seed) + ")");
  const test::DeviceProblem dev(c.problem());
  for (const BlockMaskOptions& o : option_sets(bs)) {
    const BlockMask cpu = estimate_block_mask(c.problem(), o);
    for (int path = 0; path < kKernelPaths; ++path) {
      const BlockMask gpu = gpu_mask(dev.problem(), o, path);
      ASSERT_EQ(gpu.query_blocks, cpu.query_blocks);
      ASSERT_EQ(gpu.key_blocks, cpu.key_blocks);
      ASSERT_EQ(gpu.kept.size(), cpu.kept.size());
      std::size_t bad = 0;
      for (std::size_t r = 0; r < cpu.kept.size(); ++r) {
        if (gpu.kept[r] == cpu.kept[r]) continue;
        if (++bad <= 5)
          std::printf("[block mask cuda] %s %s path %s row %zu (b,h,qb)=(%lld,%lld,%lld): cpu %s gpu %s\n",
                      what.c_str(), describe(o).c_str(), path_name(path).c_str(), r,
                      static_cast<long long>(r / (cpu.heads * cpu.query_blocks)),
                      static_cast<long long>(r / cpu.query_blocks % cpu.heads),
                      static_cast<long long>(r % cpu.query_blocks), list(cpu.kept[r]).c_str(),
                      list(gpu.kept[r]).c_str());
      }
      EXPECT_EQ(bad, 0u) << bad << " of " << cpu.kept.size() << " rows differ, " << describe(o) << " path "
                         << path_name(path);
    }
  }
}

// Rewrites element `index` of a case's q (in its dtype) to `value`.
void set_q(AttentionCase& c, std::size_t index, double value) {
  std::vector<double> q = test::decode(c.q.data(), c.shape.dtype, c.q.size() / dtype_size(c.shape.dtype));
  q[index] = value;
  c.q = test::encode_f64(q, c.shape.dtype);
}

TEST(BlockMaskCuda, MatchesCpuOverDtypesBlockSizesAndKeyPadding) {
  DATTN_SKIP_WITHOUT_CUDA();
  // 700 is a multiple of neither block size; GQA 4:2; EmptyRow gives batch item 1 no valid key.
  for (const DType dt : {DType::BF16, DType::F16})
    for (const std::int64_t bs : {64, 128})
      for (const MaskMode mode : {MaskMode::None, MaskMode::Lengths, MaskMode::EmptyRow, MaskMode::KeyMask}) {
        AttentionCase c = test::make_random_case({2, 700, 700, 4, 2, 64, dt}, mode, test::fresh_seed());
        expect_same_masks(c, bs, std::string(test::mask_mode_name(mode)));
      }
}

TEST(BlockMaskCuda, MatchesCpuOnOtherShapes) {
  DATTN_SKIP_WITHOUT_CUDA();
  struct Shape {
    AttentionShape shape;
    MaskMode mode;
    std::int64_t bs;
  };
  const Shape shapes[] = {
      {{1, 300, 77, 3, 1, 36, DType::BF16}, MaskMode::Lengths, 128},  // one key block; H*D not a multiple of 8
      {{1, 300, 77, 3, 1, 36, DType::F16}, MaskMode::None, 64},
      {{2, 77, 300, 2, 2, 128, DType::BF16}, MaskMode::KeyMask, 128},  // Sq < Sk, one query block
      // Density-only rows of at most 128 key blocks take the warp kernel (warp_score_select.cu), with 1, 2, 3
      // or 4 score slots per lane; 16-byte channel reads when D % 4 == 0, one channel at a time otherwise.
      {{1, 100, 2100, 3, 3, 40, DType::F16}, MaskMode::None, 64},       // 33 key blocks: 2 slots
      {{2, 130, 4100, 2, 1, 18, DType::BF16}, MaskMode::Lengths, 64},   // 65 key blocks: 3 slots, D % 4 != 0
      {{1, 150, 12300, 2, 2, 64, DType::BF16}, MaskMode::KeyMask, 128}, // 97 key blocks: 3 slots, 4 sorted
      {{1, 200, 8192, 2, 1, 16, DType::F16}, MaskMode::None, 64},       // 128 key blocks: a full 128-slot sort
      {{1, 256, 8100, 9, 3, 32, DType::BF16}, MaskMode::None, 64},      // 127 key blocks, GQA 3:1
      {{2, 300, 2000, 3, 1, 128, DType::BF16}, MaskMode::KeyMask, 64},  // 32 key blocks, GQA 3:1, 2 items
      {{1, 200, 3000, 2, 2, 256, DType::F16}, MaskMode::Lengths, 64},   // head dim 256
      {{1, 1000, 19200, 2, 1, 16, DType::F16}, MaskMode::Lengths, 64},  // 300 key blocks: score + select kernels
      {{1, 256, 320000, 1, 1, 8, DType::BF16}, MaskMode::KeyMask, 64},  // 5000 key blocks: an 8192-key sort
      {{300, 70, 130, 1, 1, 8, DType::BF16}, MaskMode::Lengths, 64},  // > 256 key lengths: copied, not a parameter
  };
  for (const Shape& s : shapes) {
    AttentionCase c = test::make_random_case(s.shape, s.mode, test::fresh_seed());
    expect_same_masks(c, s.bs, std::string(test::mask_mode_name(s.mode)));
  }
}

TEST(BlockMaskCuda, TiesGoByIndexAndNanScoresSortFirst) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (const DType dt : {DType::BF16, DType::F16}) {
    const AttentionShape shape{2, 500, 600, 2, 2, 64, dt};
    {  // all-equal inputs: every score ties (blocks of fewer valid keys have the same mean)
      AttentionCase c = test::make_random_case(shape, MaskMode::Lengths, test::fresh_seed());
      const std::size_t nq = c.q.size() / dtype_size(dt), nk = c.k.size() / dtype_size(dt);
      c.q = test::encode_f64(std::vector<double>(nq, 0.5), dt);
      c.k = test::encode_f64(std::vector<double>(nk, -0.25), dt);
      expect_same_masks(c, 64, "all equal");
    }
    {  // q all zero and a negative scale: every score is -0, which ties with +0 (none here) and itself
      AttentionCase c = test::make_random_case(shape, MaskMode::None, test::fresh_seed());
      c.q = test::encode_f64(std::vector<double>(c.q.size() / dtype_size(dt), 0.0), dt);
      c.scale = -1.0f;
      expect_same_masks(c, 128, "zero scores");
    }
    {  // a NaN in q: every score of its query block (b 0, h 1, rows 64..127) is NaN
      AttentionCase c = test::make_random_case(shape, MaskMode::KeyMask, test::fresh_seed());
      set_q(c, ((0 * shape.seq_q + 70) * shape.heads_q + 1) * shape.head_dim + 3,
            std::numeric_limits<double>::quiet_NaN());
      expect_same_masks(c, 64, "nan in q");
    }
  }
}

TEST(BlockMaskCuda, RejectsOtherDtypesAndTooManyKeyBlocks) {
  DATTN_SKIP_WITHOUT_CUDA();
  AttentionCase c = test::make_random_case({1, 128, 128, 2, 2, 64, DType::F32}, MaskMode::None, test::fresh_seed());
  const test::DeviceProblem dev(c.problem());
  try {
    gpu_mask(dev.problem(), make_options(128, {}, {}, true));
    ADD_FAILURE() << "fp32 was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("fp32"), std::string::npos) << e.what();
  }
  // Rejected before any device memory is touched: the pointers are never read.
  AttentionProblem big;
  big.shape = {1, 64, 64 * 16385, 1, 1, 8, DType::BF16};
  try {
    gpu_mask(big, make_options(64, 0.5, {}, true));
    ADD_FAILURE() << "16385 key blocks were accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("16385"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dattn::sparse
