// SAGE_ATTN's quantization pass on CUDA against the CPU steps it implements (sage_quant.h via
// cpu_sage.h's prepare_q / prepare_kv), buffer by buffer: Q8 and its scales, V in e4m3 (transposed,
// keys permuted within groups of 16) and its scales must be identical; K8 may differ by one step where
// the K mean, summed in another order on the GPU, moves a value across a rounding boundary. Padding
// rows and keys must be zeros. Covers head dims 64 and 128, bf16 and fp16, GQA, sequence lengths that
// are not multiples of the blocks, key lengths and a key mask, and K with large channel offsets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "attention/backends/sage_attn/cpu_sage.h"
#include "attention/backends/sage_attn/cuda/sage_buffers.h"
#include "attention/backends/sage_attn/cuda_entry.h"
#include "dattn/core/device.h"
#include "support/attention_cases.h"
#include "support/device_case.h"

namespace dattn {
namespace {

using sage::cuda_impl::v_key_position;
using test::AttentionCase;
using test::MaskMode;

struct QuantCase {
  std::int64_t head_dim;
  DType dtype;
  MaskMode mask;
};

std::string name_of(const QuantCase& qc) {
  return "D=" + std::to_string(qc.head_dim) + " " + std::string(dtype_name(qc.dtype)) + " " +
         std::string(test::mask_mode_name(qc.mask));
}

// Rows [0, rows) of head h of a BSHD tensor of batch item b, as fp32 [rows, D].
std::vector<float> head_rows(const std::vector<double>& x, std::int64_t b, std::int64_t h, std::int64_t rows,
                             std::int64_t heads, std::int64_t D) {
  std::vector<float> out(rows * D);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t d = 0; d < D; ++d) out[i * D + d] = static_cast<float>(x[((b * rows + i) * heads + h) * D + d]);
  return out;
}

class SageQuantCuda : public ::testing::TestWithParam<QuantCase> {};

TEST_P(SageQuantCuda, BuffersMatchTheCpuSteps) {
  DATTN_SKIP_WITHOUT_CUDA();
  const QuantCase qc = GetParam();
  AttentionShape shape;
  shape.batch = 2;
  shape.seq_q = 200;  // neither a multiple of 16 nor of 128
  shape.seq_k = 300;  // nor of 64
  shape.heads_q = 4;
  shape.heads_kv = 2;
  shape.head_dim = qc.head_dim;
  shape.dtype = qc.dtype;
  const std::uint64_t seed = test::fresh_seed();
  AttentionCase c = test::make_random_case(shape, qc.mask, seed);
  // K with large per-channel offsets on a quarter of the channels, so the smoothing step matters.
  const std::int64_t B = shape.batch, Sq = shape.seq_q, Sk = shape.seq_k, Hq = shape.heads_q,
                     Hkv = shape.heads_kv, D = shape.head_dim;
  std::vector<double> k = test::decode(c.k.data(), qc.dtype, c.k.size() / dtype_size(qc.dtype));
  for (std::size_t i = 0; i < k.size(); ++i)
    if (static_cast<std::int64_t>(i) % D < D / 4) k[i] += 24.0;
  c.k = test::encode_f64(k, qc.dtype);
  k = test::decode(c.k.data(), qc.dtype, k.size());
  const std::vector<double> q = test::decode(c.q.data(), qc.dtype, c.q.size() / dtype_size(qc.dtype));
  const std::vector<double> v = test::decode(c.v.data(), qc.dtype, c.v.size() / dtype_size(qc.dtype));

  const AttentionProblem host = c.problem();
  const test::DeviceProblem dev(host);
  const sage::SageQuantized got = sage::sage_quantize_download_cuda_entry(dev.problem());
  const std::int64_t Sqp = got.seq_q_pad, Skp = got.seq_k_pad;
  ASSERT_EQ(Sqp, 256);
  ASSERT_EQ(Skp, 384);
  const std::string what = name_of(qc) + " seed " + std::to_string(seed);

  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < Hq; ++h) {
      std::vector<float> qh = head_rows(q, b, h, Sq, Hq, D);
      const sage::Int8Blocks want = sage::prepare_q(qh.data(), Sq, D, host.softmax_scale());
      const std::int64_t bh = b * Hq + h;
      std::int64_t bad = 0;
      for (std::int64_t i = 0; i < Sqp; ++i)
        for (std::int64_t d = 0; d < D; ++d) {
          const int w = i < Sq ? want.data[i * D + d] : 0;
          bad += got.q8[(bh * Sqp + i) * D + d] != w;
        }
      EXPECT_EQ(bad, 0) << "q8 elements differ, head " << bh << ", " << what;
      for (std::int64_t blk = 0; blk < Sqp / 16; ++blk) {
        const float w = blk < static_cast<std::int64_t>(want.scale.size()) ? want.scale[blk] : 0.f;
        EXPECT_EQ(got.q_scale[bh * (Sqp / 16) + blk], w) << "q scale block " << blk << ", head " << bh << ", " << what;
      }
    }
    sage::KeyValid valid;
    if (host.has_key_padding()) {
      valid.resize(Sk);
      for (std::int64_t j = 0; j < Sk; ++j) valid[j] = host.key_valid(b, j) ? 1 : 0;
    }
    for (std::int64_t hk = 0; hk < Hkv; ++hk) {
      std::vector<float> kh = head_rows(k, b, hk, Sk, Hkv, D), vh = head_rows(v, b, hk, Sk, Hkv, D);
      const sage::PreparedKV want = sage::prepare_kv(kh.data(), vh.data(), Sk, D, valid);
      const std::int64_t bh = b * Hkv + hk;
      std::int64_t k_off_by_one = 0, k_bad = 0, v_bad = 0;
      for (std::int64_t j = 0; j < Skp; ++j)
        for (std::int64_t d = 0; d < D; ++d) {
          const int wk = j < Sk ? want.k.data[j * D + d] : 0;
          const int dk = got.k8[(bh * Skp + j) * D + d] - wk;
          k_off_by_one += std::abs(dk) == 1;
          k_bad += std::abs(dk) > 1 || (j >= Sk && dk != 0);
          const int wv = j < Sk ? want.v.data[j * D + d] : 0;
          const std::int64_t pos = (j / 16) * 16 + v_key_position(static_cast<int>(j % 16));
          v_bad += got.v8t[(bh * D + d) * Skp + pos] != wv;
        }
      EXPECT_EQ(k_bad, 0) << "k8 elements off by more than one (or nonzero padding), kv head " << bh << ", " << what;
      EXPECT_LE(k_off_by_one, Sk * D / 100) << "k8 elements off by one, kv head " << bh << ", " << what;
      EXPECT_EQ(v_bad, 0) << "v8 elements differ, kv head " << bh << ", " << what;
      for (std::int64_t blk = 0; blk < Skp / 64; ++blk) {
        const float w = blk < static_cast<std::int64_t>(want.k.scale.size()) ? want.k.scale[blk] : 0.f;
        EXPECT_NEAR(got.k_scale[bh * (Skp / 64) + blk], w, 1e-5 * w) << "k scale block " << blk << ", " << what;
      }
      for (std::int64_t d = 0; d < D; ++d)
        EXPECT_EQ(got.v_scale[bh * D + d], want.v.scale[d]) << "v scale channel " << d << ", " << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SageQuantCuda, SageQuantCuda,
                         ::testing::Values(QuantCase{128, DType::BF16, MaskMode::Lengths},
                                           QuantCase{128, DType::F16, MaskMode::KeyMask},
                                           QuantCase{64, DType::BF16, MaskMode::KeyMask},
                                           QuantCase{64, DType::F16, MaskMode::Lengths},
                                           QuantCase{128, DType::BF16, MaskMode::None},
                                           QuantCase{128, DType::BF16, MaskMode::EmptyRow}));

}  // namespace
}  // namespace dattn
