// The Hopper (sm_90a) FLASH_ATTN kernel against the float64 reference: partial tiles, GQA, key
// lengths (including an empty batch item, which must give zeros), a long sequence, more work tiles
// than SMs (the persistent grid); head dim 128 and 64. Skipped without a compute capability 9.0 device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dattn/attention/metrics.h"
#include "dattn/attention/reference.h"
#include "dattn/core/device.h"
#include "dattn/core/device_memory.h"
#include "support/attention_cases.h"
#include "support/device_case.h"

#if defined(DATTN_WITH_CUDA)
#include "attention/kernels/flash/hopper/flash_hopper.h"
#endif

namespace dattn {
namespace {

struct HopperCase {
  std::int64_t batch, seq_q, seq_k, heads_q, heads_kv;
  std::vector<std::int64_t> key_lengths;  // empty: no key padding
  DType dtype = DType::BF16;
  bool poison_padding = false;  // NaN in K and V of the keys padding hides (after the reference)
  std::int64_t head_dim = 128;
  bool causal = false;  // MaskKind::Causal (Sq == Sk), with the key lengths if any
};

void run_hopper_case(const HopperCase& hc) {
  if (const std::string why = test::cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  if (cuda_compute_capability() < 90) GTEST_SKIP() << "needs compute capability 9.0 (" << cuda_device_summary() << ")";
#if defined(DATTN_WITH_CUDA)
  AttentionShape shape;
  shape.batch = hc.batch;
  shape.seq_q = hc.seq_q;
  shape.seq_k = hc.seq_k;
  shape.heads_q = hc.heads_q;
  shape.heads_kv = hc.heads_kv;
  shape.head_dim = hc.head_dim;
  shape.dtype = hc.dtype;
  test::AttentionCase c = test::make_random_case(shape, test::MaskMode::None, 1234);
  if (!hc.key_lengths.empty()) {
    c.key_lengths = hc.key_lengths;
    c.shape.mask = MaskKind::KeyPadding;
  }
  if (hc.causal) c.shape.mask = MaskKind::Causal;
  const AttentionProblem host = c.problem();
  ASSERT_TRUE(flash::flash_hopper_supports(host.shape, cuda_compute_capability())) << host.shape.describe();

  std::vector<double> ref;
  attention_reference_f64(host, ref);
  if (hc.poison_padding) {
    const std::size_t row_bytes = std::size_t(shape.head_dim) * dtype_size(shape.dtype);
    for (std::int64_t b = 0; b < shape.batch; ++b)
      for (std::int64_t j = 0; j < shape.seq_k; ++j)
        if (!host.key_valid(b, j))
          for (std::int64_t h = 0; h < shape.heads_kv; ++h) {
            const std::size_t off = std::size_t((b * shape.seq_k + j) * shape.heads_kv + h) * row_bytes;
            std::memset(c.k.data() + off, 0xFF, row_bytes);  // NaN in bf16 and fp16
            std::memset(c.v.data() + off, 0xFF, row_bytes);
          }
  }

  const test::DeviceProblem dp(host);
  dp.problem().validate();
  flash::flash_attention_hopper(dp.problem());
  check_device("flash_attention_hopper");
  ASSERT_EQ(dp.download(c.out.data()), 0u) << "guard bytes around the output were overwritten";

  const std::vector<double> got = c.output_f64();
  std::size_t nonfinite = 0;
  for (double x : got) nonfinite += !std::isfinite(x);
  ASSERT_EQ(nonfinite, 0u) << "non-finite (unwritten?) outputs of " << got.size() << " for " << host.shape.describe();

  ASSERT_EQ(ref.size(), got.size());
  // Batch items without a valid key: exact zeros.
  const std::int64_t row = host.shape.heads_q * host.shape.head_dim;
  for (std::int64_t b = 0; b < static_cast<std::int64_t>(hc.key_lengths.size()); ++b) {
    if (hc.key_lengths[b] != 0) continue;
    for (std::int64_t i = 0; i < host.shape.seq_q * row; ++i)
      ASSERT_EQ(got[static_cast<std::size_t>(b * host.shape.seq_q * row + i)], 0.0) << "batch " << b;
  }
  const ErrorStats e = compare(got.data(), ref.data(), got.size());
  EXPECT_LE(e.rel_l2, 3e-3) << host.shape.describe() << " rel_l1=" << e.rel_l1 << " max_abs=" << e.max_abs;
#else
  (void)hc;  // unreachable without CUDA: the skip above always fires
#endif
}

// Causal (the DenseCausal walk): partial tiles, GQA, key lengths with an empty item and NaN in the
// padded keys, fp16, head dim 64, and a persistent grid with many tiles of unequal length.
HopperCase causal(HopperCase c) {
  c.causal = true;
  return c;
}
TEST(FlashHopperCuda, CausalPartialTiles) { run_hopper_case(causal({1, 1000, 1000, 2, 2, {}})); }
TEST(FlashHopperCuda, CausalGqaKeyLengthsNaNPadding) {
  run_hopper_case(causal({3, 700, 700, 8, 2, {0, 300, 700}, DType::BF16, true}));
}
TEST(FlashHopperCuda, CausalFp16Hd64) { run_hopper_case(causal({2, 517, 517, 4, 1, {}, DType::F16, false, 64})); }
TEST(FlashHopperCuda, CausalPersistentManyTiles) {
  run_hopper_case(causal({2, 4096, 4096, 8, 2, {4000, 2500}, DType::BF16, true}));
}

TEST(FlashHopperCuda, SingleTile) { run_hopper_case({1, 128, 128, 1, 1, {}}); }
TEST(FlashHopperCuda, PartialTiles) { run_hopper_case({1, 1000, 1000, 2, 2, {}}); }
TEST(FlashHopperCuda, UnequalShortSequences) { run_hopper_case({1, 77, 131, 1, 1, {}}); }
TEST(FlashHopperCuda, GroupedQuery) { run_hopper_case({1, 300, 260, 8, 2, {}}); }
TEST(FlashHopperCuda, KeyLengthsWithEmptyItem) { run_hopper_case({3, 200, 300, 2, 2, {0, 70, 300}}); }
TEST(FlashHopperCuda, LongSequence) { run_hopper_case({1, 4096, 4096, 2, 2, {}}); }
TEST(FlashHopperCuda, Fp16) { run_hopper_case({2, 333, 517, 4, 1, {}, DType::F16}); }
TEST(FlashHopperCuda, KeyLengthsSingleItem) {
  run_hopper_case({1, 256, 384, 2, 1, {200}});
}
TEST(FlashHopperCuda, NaNInPaddedKeys) {
  run_hopper_case({3, 77, 300, 2, 2, {0, 70, 200}, DType::BF16, true});
  run_hopper_case({2, 130, 131, 2, 1, {131, 5}, DType::F16, true});
}

// More work tiles (408) than SMs: each persistent CTA runs several tiles, some of them empty (no
// valid key) between real ones, so the Q/K/V ring phases and the TMA-store staging carry across tiles.
TEST(FlashHopperCuda, PersistentManyTilesWithPadding) {
  run_hopper_case({3, 2100, 300, 8, 4, {0, 130, 300}, DType::BF16, true});
}

// Head dim 64: the same shapes (one 128-byte slab per row, P V with wgmma m64n64k16).
HopperCase hd64(HopperCase hc) {
  hc.head_dim = 64;
  return hc;
}
TEST(FlashHopperCudaHd64, SingleTile) { run_hopper_case(hd64({1, 128, 128, 1, 1, {}})); }
TEST(FlashHopperCudaHd64, PartialTiles) { run_hopper_case(hd64({1, 1000, 1000, 2, 2, {}})); }
TEST(FlashHopperCudaHd64, UnequalShortSequences) { run_hopper_case(hd64({1, 77, 131, 1, 1, {}})); }
TEST(FlashHopperCudaHd64, GroupedQuery) { run_hopper_case(hd64({1, 300, 260, 8, 2, {}})); }
TEST(FlashHopperCudaHd64, KeyLengthsWithEmptyItem) { run_hopper_case(hd64({3, 200, 300, 2, 2, {0, 70, 300}})); }
TEST(FlashHopperCudaHd64, LongSequence) { run_hopper_case(hd64({1, 4096, 4096, 2, 2, {}})); }
TEST(FlashHopperCudaHd64, Fp16) { run_hopper_case(hd64({2, 333, 517, 4, 1, {}, DType::F16})); }
TEST(FlashHopperCudaHd64, KeyLengthsSingleItem) { run_hopper_case(hd64({1, 256, 384, 2, 1, {200}})); }
TEST(FlashHopperCudaHd64, NaNInPaddedKeys) {
  run_hopper_case(hd64({3, 77, 300, 2, 2, {0, 70, 200}, DType::BF16, true}));
  run_hopper_case(hd64({2, 130, 131, 2, 1, {131, 5}, DType::F16, true}));
}

TEST(FlashHopperCudaHd64, PersistentManyTilesWithPadding) {
  run_hopper_case(hd64({3, 2100, 300, 8, 4, {0, 130, 300}, DType::F16, true}));
}

TEST(FlashHopperCuda, SupportedHeadDims) {
#if defined(DATTN_WITH_CUDA)
  AttentionShape shape;
  shape.batch = 1;
  shape.seq_q = shape.seq_k = 128;
  shape.heads_q = shape.heads_kv = 1;
  shape.dtype = DType::BF16;
  for (std::int64_t d : {32, 64, 80, 96, 128, 256}) {
    shape.head_dim = d;
    EXPECT_EQ(flash::flash_hopper_supports(shape, 90), d == 64 || d == 128) << "head dim " << d;
    EXPECT_FALSE(flash::flash_hopper_supports(shape, 80)) << "head dim " << d;
  }
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

}  // namespace
}  // namespace dattn
