// SPARSE_BLOCK's block mask against hand-computed examples (docs/backend-semantics.md, steps 1-4).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "attention/backends/sparse_block/block_mask.h"

namespace dattn::sparse {
namespace {

using Blocks = std::vector<std::int32_t>;

BlockMaskOptions options(std::optional<double> density, std::optional<double> cdf, bool diagonal) {
  BlockMaskOptions o;
  o.block_size = 64;
  o.density = density;
  o.cdf_threshold = cdf;
  o.keep_diagonal = diagonal;
  return o;
}

TEST(BlockMask, DensityCountIsCeilWithAtLeastOneBlock) {
  EXPECT_EQ(density_block_count(0.25, 4), 1);
  EXPECT_EQ(density_block_count(0.25, 5), 2);
  EXPECT_EQ(density_block_count(0.3, 10), 3);  // 0.3 * 10 is 3.0000000000000004 in binary
  EXPECT_EQ(density_block_count(0.31, 10), 4);
  EXPECT_EQ(density_block_count(1e-6, 7), 1);
  EXPECT_EQ(density_block_count(1.0, 7), 7);
  EXPECT_EQ(density_block_count(0.5, 0), 0);
}

TEST(BlockMask, KeepsEveryBlockOnlyAtDensityOneWithoutCdf) {
  BlockMaskOptions o;
  EXPECT_FALSE(keeps_every_block(o));  // no density given: the default 0.25 applies
  o.density = 1.0;
  EXPECT_TRUE(keeps_every_block(o));
  o.keep_diagonal = false;
  EXPECT_TRUE(keeps_every_block(o));
  o.cdf_threshold = 1.0;  // a cdf threshold may keep fewer blocks even at density 1
  EXPECT_FALSE(keeps_every_block(o));
  o.cdf_threshold.reset();
  o.density = 0.999;
  EXPECT_FALSE(keeps_every_block(o));
}

TEST(BlockMask, OrderByScoreTiesByIndexDiagonalFirst) {
  const std::vector<float> s = {0.5f, 2.0f, 0.5f, 1.0f};
  const std::vector<std::int32_t> n = {64, 64, 64, 64};
  EXPECT_EQ(select_key_blocks(s, n, 0, options(1.0, {}, false)), (Blocks{1, 3, 0, 2}));
  EXPECT_EQ(select_key_blocks(s, n, 2, options(1.0, {}, true)), (Blocks{2, 1, 3, 0}));
  EXPECT_EQ(select_key_blocks(s, n, 1, options(1.0, {}, true)), (Blocks{1, 3, 0, 2}));
  EXPECT_EQ(select_key_blocks(s, n, 7, options(1.0, {}, true)), (Blocks{1, 3, 0, 2}));  // no such key block
  EXPECT_EQ(select_key_blocks(s, n, 2, options(0.5, {}, true)), (Blocks{2, 1}));
  // Default density 0.25 of 4 blocks: one block, the diagonal.
  EXPECT_EQ(select_key_blocks(s, n, 2, options({}, {}, true)), (Blocks{2}));
}

TEST(BlockMask, KeyBlocksWithoutValidKeysAreExcluded) {
  const std::vector<float> s = {0.5f, 2.0f, 0.5f, 1.0f};
  const std::vector<std::int32_t> n = {64, 0, 64, 10};
  EXPECT_EQ(select_key_blocks(s, n, 1, options(1.0, {}, true)), (Blocks{3, 0, 2}));  // diagonal 1 is padding
  EXPECT_EQ(select_key_blocks(s, n, 0, options(0.5, {}, true)), (Blocks{0, 3}));     // ceil(0.5 * 3) = 2
  EXPECT_TRUE(select_key_blocks(s, std::vector<std::int32_t>{0, 0, 0, 0}, 0, options(1.0, {}, true)).empty());
}

TEST(BlockMask, CdfThresholdCountsEstimatedMass) {
  // Equal block sizes: mass = softmax(s) = {0.5, 0.3, 0.2}.
  const std::vector<float> s = {std::log(5.0f), std::log(3.0f), std::log(2.0f)};
  const std::vector<std::int32_t> n = {64, 64, 64};
  EXPECT_EQ(select_key_blocks(s, n, 9, options({}, 0.45, false)), (Blocks{0}));
  EXPECT_EQ(select_key_blocks(s, n, 9, options({}, 0.7, false)), (Blocks{0, 1}));
  EXPECT_EQ(select_key_blocks(s, n, 9, options({}, 0.9, false)), (Blocks{0, 1, 2}));
  EXPECT_EQ(select_key_blocks(s, n, 9, options({}, 1.0, false)), (Blocks{0, 1, 2}));
  // The diagonal counts first: 0.2 + 0.5 reaches 0.6.
  EXPECT_EQ(select_key_blocks(s, n, 2, options({}, 0.6, true)), (Blocks{2, 0}));
}

TEST(BlockMask, CdfMassWeighsBlocksByTheirValidKeys) {
  // Equal scores, valid keys 64, 16, 64: mass 4/9, 1/9, 4/9 (unweighted 1/3 each would stop at 2).
  const std::vector<float> s = {0.0f, 0.0f, 0.0f};
  EXPECT_EQ(select_key_blocks(s, std::vector<std::int32_t>{64, 16, 64}, 9, options({}, 0.6, false)),
            (Blocks{0, 1, 2}));
  EXPECT_EQ(select_key_blocks(s, std::vector<std::int32_t>{64, 64, 64}, 9, options({}, 0.6, false)), (Blocks{0, 1}));
}

TEST(BlockMask, SmallerSetWinsOnlyWhenDensityIsGiven) {
  const std::vector<float> s = {std::log(5.0f), std::log(3.0f), std::log(1.0f), std::log(1.0f)};
  const std::vector<std::int32_t> n = {64, 64, 64, 64};  // mass 0.5, 0.3, 0.1, 0.1
  EXPECT_EQ(select_key_blocks(s, n, 9, options({}, 0.85, false)).size(), 3u);     // cdf alone: no 0.25 default
  EXPECT_EQ(select_key_blocks(s, n, 9, options(0.25, 0.85, false)).size(), 1u);   // density smaller
  EXPECT_EQ(select_key_blocks(s, n, 9, options(1.0, 0.45, false)).size(), 1u);    // cdf smaller
  EXPECT_EQ(select_key_blocks(s, n, 9, options(0.75, 0.95, false)).size(), 3u);   // density smaller
}

// 3 query blocks x 4 key blocks, D = 2, scale 1. Every row of query block i equals qm[i], every valid
// key of key block j equals km[j]; hidden keys hold garbage that pooling must ignore.
TEST(BlockMask, EstimateFromPooledBlocks) {
  const std::int64_t Sq = 150, Sk = 246, D = 2;  // partial last blocks: 22 rows, 54 keys
  const float qm[3][2] = {{1, 0}, {0, 1}, {1, 1}};
  const float km[4][2] = {{1, 0}, {0, 1}, {2, 0}, {0, 0}};
  std::vector<float> q(2 * Sq * D), k(2 * Sk * D), v(2 * Sk * D, 0.0f), out(2 * Sq * D);
  std::vector<std::uint8_t> key_mask(2 * Sk, 1);
  for (std::int64_t b = 0; b < 2; ++b) {
    for (std::int64_t i = 0; i < Sq; ++i)
      for (std::int64_t d = 0; d < D; ++d) q[(b * Sq + i) * D + d] = qm[i / 64][d];
    for (std::int64_t j = 0; j < Sk; ++j)
      for (std::int64_t d = 0; d < D; ++d) k[(b * Sk + j) * D + d] = km[j / 64][d];
  }
  for (std::int64_t j = 64; j < 96; ++j) {  // batch 0: half of key block 1 hidden, holding garbage
    key_mask[j] = 0;
    k[j * D] = k[j * D + 1] = 100.0f;
  }
  std::fill_n(key_mask.begin() + Sk + 128, Sk - 128, 0);  // batch 1: only key blocks 0 and 1
  AttentionProblem p;
  p.shape = {2, Sq, Sk, 1, 1, D, DType::F32, MaskKind::KeyPadding};
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.out = out.data();
  p.scale = 1.0f;
  p.key_mask = key_mask.data();

  // Scores of batch 0: qb0 {1, 0, 2, 0}, qb1 {0, 1, 0, 0}, qb2 {1, 1, 2, 0}.
  BlockMask m = estimate_block_mask(p, options(1.0, {}, false));
  ASSERT_EQ(m.query_blocks, 3);
  ASSERT_EQ(m.key_blocks, 4);
  EXPECT_EQ(m.at(0, 0, 0), (Blocks{2, 0, 1, 3}));
  EXPECT_EQ(m.at(0, 0, 1), (Blocks{1, 0, 2, 3}));  // ties 0, 2, 3 by index
  EXPECT_EQ(m.at(0, 0, 2), (Blocks{2, 0, 1, 3}));
  m = estimate_block_mask(p, options(0.5, {}, true));
  EXPECT_EQ(m.at(0, 0, 0), (Blocks{0, 2}));
  EXPECT_EQ(m.at(0, 0, 1), (Blocks{1, 0}));
  EXPECT_EQ(m.at(0, 0, 2), (Blocks{2, 0}));
  // Batch 1: key blocks 2 and 3 are padding; qb2's diagonal is gone and its tie 0/1 goes to 0.
  EXPECT_EQ(m.at(1, 0, 0), (Blocks{0}));
  EXPECT_EQ(m.at(1, 0, 1), (Blocks{1}));
  EXPECT_EQ(m.at(1, 0, 2), (Blocks{0}));
}

// Pooling sums each group of 16 rows in row order, then the group sums (the order the CUDA estimator
// reproduces bit for bit). Key block 0 holds 2^24 then 31 ones: in groups its sum is 2^24 + 16 (the
// second group's 16 ones survive), row by row every one is rounded away. Key block 1's mean lies in
// between, so the order of the two blocks tells which summation ran.
TEST(BlockMask, PoolingSumsGroupsOf16RowsThenTheGroups) {
  const std::int64_t Sq = 64, Sk = 128;
  std::vector<float> q(Sq, 1.0f), k(Sk, 0.0f), v(Sk, 0.0f), out(Sq);
  k[0] = 16777216.0f;                                    // 2^24
  for (std::int64_t j = 1; j < 32; ++j) k[j] = 1.0f;     // rows 32-63 stay 0
  k[64] = 16777224.0f;                                   // block 1: mean 262144.125 in any order
  AttentionProblem p;
  p.shape = {1, Sq, Sk, 1, 1, 1, DType::F32, MaskKind::None};
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.out = out.data();
  p.scale = 1.0f;
  // Grouped: block 0's mean is (2^24 + 16) / 64 = 262144.25 > 262144.125. Row by row it would be
  // 2^24 / 64 = 262144 and block 1 would come first.
  const BlockMask m = estimate_block_mask(p, options(1.0, {}, false));
  EXPECT_EQ(m.at(0, 0, 0), (Blocks{0, 1}));
}

TEST(BlockMask, OptionsOutsideTheirRangeAreRefused) {
  EXPECT_NO_THROW(check_mask_options(options(1.0, 0.5, true)));
  EXPECT_NO_THROW(check_mask_options(options({}, {}, true)));
  for (const double bad : {0.0, -0.5, 1.5, std::nan("")}) {
    EXPECT_THROW(check_mask_options(options(bad, {}, true)), std::invalid_argument) << "density " << bad;
    EXPECT_THROW(check_mask_options(options({}, bad, true)), std::invalid_argument) << "cdf_threshold " << bad;
  }
  BlockMaskOptions zero = options(0.5, {}, true);
  zero.block_size = 0;
  EXPECT_THROW(check_mask_options(zero), std::invalid_argument);
}

}  // namespace
}  // namespace dattn::sparse
