// The CUDA FLASH_ATTN kernel against the float64 reference: head dims, tile edges (Sq, Sk not tile
// multiples), GQA, key lengths (an empty item must be exact zeros), boolean key masks with holes, the
// uploaded-lengths path of large batches, and one long sequence. Inputs are random and exact in the
// dtype; the device output starts as NaN (0xFF) between guard bytes, so unwritten elements and stray
// writes show. Skipped without a CUDA build or device; the predicate's refusals are checked in every
// CUDA build.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attention/backends/backends.h"
#include "dattn/attention/backend.h"
#include "dattn/attention/reference.h"
#include "dattn/core/device.h"
#include "dattn/core/device_memory.h"
#include "support/attention_cases.h"
#include "support/device_case.h"
#ifdef DATTN_WITH_CUDA
#include "attention/kernels/flash/flash_cuda.h"
#endif

namespace dattn {
namespace {

using test::AttentionCase;
using test::MaskMode;

AttentionCase random_case(const AttentionShape& shape, MaskMode mode = MaskMode::None) {
  return test::make_random_case(shape, mode, test::fresh_seed());
}

double limit_for(DType t) { return t == DType::BF16 ? 3e-3 : 1e-3; }

AttentionShape make_shape(DType t, std::int64_t B, std::int64_t Sq, std::int64_t Sk, std::int64_t Hq,
                          std::int64_t Hkv, std::int64_t D) {
  AttentionShape s;
  s.batch = B;
  s.seq_q = Sq;
  s.seq_k = Sk;
  s.heads_q = Hq;
  s.heads_kv = Hkv;
  s.head_dim = D;
  s.dtype = t;
  return s;
}

// Writes NaN into K and V of every key that key padding hides (the reference has already been taken):
// such keys must never reach the output.
void poison_hidden_keys(AttentionCase& c) {
  const auto& s = c.shape;
  const std::size_t es = dtype_size(s.dtype), row = std::size_t(s.head_dim) * es;
  const AttentionProblem p = c.problem();
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t j = 0; j < s.seq_k; ++j) {
      if (p.key_valid(b, j)) continue;
      for (std::int64_t h = 0; h < s.heads_kv; ++h) {
        const std::size_t off = std::size_t((b * s.seq_k + j) * s.heads_kv + h) * row;
        std::memset(c.k.data() + off, 0xFF, row);
        std::memset(c.v.data() + off, 0xFF, row);
      }
    }
}

// Runs the case on the GPU through the backend (support predicate included) and checks it against
// the reference; returns what failed, or "".
std::string run_and_check(AttentionCase& c, bool poison_padding = false) {
  std::vector<double> ref;
  attention_reference_f64(c.problem(), ref);
  if (poison_padding) poison_hidden_keys(c);

  const AttentionBackend& backend = flash_attn_backend();
  const Support sup = backend.supports(c.shape, Device::CUDA);
  if (!sup.ok) return "unsupported: " + sup.reason;

  constexpr std::size_t kGuard = 256;
  constexpr std::uint8_t kSentinel = 0xA5;
  const std::size_t out_bytes = c.out_numel() * dtype_size(c.shape.dtype);
  DeviceBuffer q(c.q.size()), k(c.k.size()), v(c.v.size()), out(out_bytes + 2 * kGuard);
  DeviceBuffer mask(c.key_mask.size());
  q.upload(c.q.data(), c.q.size());
  k.upload(c.k.data(), c.k.size());
  v.upload(c.v.data(), c.v.size());
  if (!c.key_mask.empty()) mask.upload(c.key_mask.data(), c.key_mask.size());
  out.fill(kSentinel);
  const std::vector<std::uint8_t> poison(out_bytes, 0xFF);  // NaN in bf16 and fp16
  out.upload(poison.data(), out_bytes, kGuard);

  AttentionProblem p = c.problem();
  p.q = q.get();
  p.k = k.get();
  p.v = v.get();
  p.out = static_cast<std::uint8_t*>(out.get()) + kGuard;
  p.key_mask = c.key_mask.empty() ? nullptr : static_cast<const std::uint8_t*>(mask.get());
  run_attention(backend, p, nlohmann::json::object(), Device::CUDA);
  check_device("FLASH_ATTN (cuda)");

  std::vector<std::uint8_t> guards(2 * kGuard);
  out.download(guards.data(), kGuard, 0);
  out.download(guards.data() + kGuard, kGuard, kGuard + out_bytes);
  for (std::uint8_t g : guards)
    if (g != kSentinel) return "the kernel wrote outside the output";
  out.download(c.out.data(), out_bytes, kGuard);

  test::Limits lim;
  lim.max_rel_l2 = limit_for(c.shape.dtype);
  lim.min_cosine = 0.9999;
  ErrorStats stats;
  const std::string err = test::check_output(c, ref, lim, &stats);
  if (!err.empty()) return err + " (" + c.shape.describe() + ", seed " + std::to_string(c.seed) + ")";
  std::printf("  %s: %s\n", c.shape.describe().c_str(), describe(stats).c_str());
  return "";
}

TEST(FlashCuda, HeadDimsAndDtypesWithPartialTiles) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (DType t : {DType::BF16, DType::F16})
    for (std::int64_t D : {32, 64, 128}) {
      AttentionCase c = random_case(make_shape(t, 1, 1000, 1000, 2, 2, D));
      EXPECT_EQ(run_and_check(c), "");
    }
}

TEST(FlashCuda, SmallOddShapesAndCustomScale) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (DType t : {DType::BF16, DType::F16})
    for (std::int64_t D : {64, 128}) {
      AttentionCase c = random_case(make_shape(t, 2, 77, 131, 3, 3, D));
      EXPECT_EQ(run_and_check(c), "");
      c.scale = 0.3f;  // sharper softmax than 1/sqrt(D)
      test::reset_output(c);
      EXPECT_EQ(run_and_check(c), "");
    }
  // One query row and one key: the smallest tiles.
  AttentionCase c = random_case(make_shape(DType::BF16, 1, 1, 1, 1, 1, 32));
  EXPECT_EQ(run_and_check(c), "");
}

TEST(FlashCuda, GroupedQueryAttention) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (std::int64_t D : {64, 128}) {
    AttentionCase c = random_case(make_shape(DType::BF16, 2, 200, 300, 8, 2, D));
    EXPECT_EQ(run_and_check(c), "");
  }
}

TEST(FlashCuda, KeyLengthsWithEmptyItemAndNaNPadding) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (DType t : {DType::BF16, DType::F16}) {
    AttentionCase c = random_case(make_shape(t, 3, 77, 131, 2, 2, 128));
    c.shape.mask = MaskKind::KeyPadding;
    c.key_lengths = {0, 70, 131};  // empty, cut inside the second 64-key tile, full
    EXPECT_EQ(run_and_check(c, /*poison_padding=*/true), "");
  }
}

// A negative scale takes the kernel's minimum-based softmax path, a zero scale gives uniform weights;
// both with hidden keys, whose scores must still count as -inf.
TEST(FlashCuda, NegativeAndZeroScaleWithKeyLengths) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (float scale : {-0.2f, 0.0f}) {
    AttentionCase c = random_case(make_shape(DType::BF16, 3, 77, 131, 2, 2, 64));
    c.shape.mask = MaskKind::KeyPadding;
    c.key_lengths = {0, 70, 131};
    c.scale = scale;
    EXPECT_EQ(run_and_check(c, /*poison_padding=*/true), "") << "scale " << scale;
  }
}

TEST(FlashCuda, BooleanKeyMaskWithHoles) {
  DATTN_SKIP_WITHOUT_CUDA();
  for (std::int64_t D : {32, 128}) {
    AttentionCase c = random_case(make_shape(DType::BF16, 2, 100, 257, 4, 2, D), MaskMode::KeyMask);
    // Hide a whole 64-key tile of item 0 too: a tile without any valid key must not disturb the rows.
    for (std::int64_t j = 64; j < 128; ++j) c.key_mask[j] = 0;
    EXPECT_EQ(run_and_check(c, /*poison_padding=*/true), "");
  }
}

TEST(FlashCuda, LargeBatchUploadsKeyLengths) {
  DATTN_SKIP_WITHOUT_CUDA();
  // More items than fit in the kernel parameters, one of them empty.
  AttentionCase c = random_case(make_shape(DType::F16, 70, 33, 45, 2, 1, 64), MaskMode::EmptyRow);
  EXPECT_EQ(run_and_check(c, /*poison_padding=*/true), "");
}

TEST(FlashCuda, LongSequence) {
  DATTN_SKIP_WITHOUT_CUDA();
  AttentionCase c = random_case(make_shape(DType::BF16, 1, 4096, 4096, 2, 2, 128));
  EXPECT_EQ(run_and_check(c), "");
}

#ifdef DATTN_WITH_CUDA
TEST(FlashCuda, PredicateRefusals) {
  AttentionShape s = make_shape(DType::BF16, 1, 64, 64, 2, 2, 128);
  EXPECT_TRUE(flash::flash_cuda_supports(s, 80).ok);
  EXPECT_TRUE(flash::flash_cuda_supports(s, 90).ok);
  EXPECT_EQ(flash::flash_cuda_supports(s, 75).reason, "needs compute capability 8.0 or newer (found 7.5)");
  s.dtype = DType::F32;
  EXPECT_EQ(flash::flash_cuda_supports(s, 90).reason, "dtype fp32 not in {bf16, fp16}");
  s.dtype = DType::F16;
  s.head_dim = 96;
  EXPECT_EQ(flash::flash_cuda_supports(s, 90).reason, "head_dim 96 not in {32, 64, 128}");
  s.head_dim = 64;
  s.mask = MaskKind::General;
  EXPECT_EQ(flash::flash_cuda_supports(s, 90).reason, "general masks are supported only by TORCH_SDPA");
  s.mask = MaskKind::KeyPadding;
  EXPECT_TRUE(flash::flash_cuda_supports(s, 86).ok);
}
#endif

}  // namespace
}  // namespace dattn
