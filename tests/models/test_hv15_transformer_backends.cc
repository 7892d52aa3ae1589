// HunyuanVideo-1.5's transformer on every attention backend, with the key-padding mask in play: a random
// model of a geometry SAGE_ATTN runs (2 heads x 64, bf16; SPARSE_BLOCK fp32) on a ragged batch of two (different valid text
// lengths), each item against its run alone and each backend against FLASH_ATTN.
#include <cstdio>

#include <gtest/gtest.h>

#include "dattn/attention/metrics.h"
#include "dattn/models/hunyuanvideo15/transformer.h"
#include "models/hv15_random_model.h"

namespace dattn::testing {
namespace {

Tensor run(const HunyuanVideo15Transformer& m, const Inputs& in) {
  return m.forward(in.hidden, in.timestep, in.text).to(DType::F32);
}

double rel_l2(const Tensor& a, const Tensor& b) {
  const auto x = a.to_f64_vector(), y = b.to_f64_vector();
  EXPECT_EQ(x.size(), y.size());
  const ErrorStats s = compare(x.data(), y.data(), std::min(x.size(), y.size()));
  EXPECT_EQ(s.nonfinite, 0u);
  return s.rel_l2;
}

// bf16 (SAGE_ATTN's dtype); SPARSE_BLOCK's CPU kernel is fp32 only.
DType dtype_for(const std::string& backend) { return backend == "SPARSE_BLOCK" ? DType::F32 : DType::BF16; }

HunyuanVideo15Transformer load(const std::string& backend, DType dtype) {
  AttentionSettings s;
  s.config = AttentionConfig::from_json_string(R"({"default":")" + backend + R"("})");
  return HunyuanVideo15Transformer::load(random_model_dir(), {Device::CPU, dtype, s});
}

class Hv15Backends : public ::testing::TestWithParam<std::string> {};

TEST_P(Hv15Backends, RaggedBatchItemsEqualTheirRunsAloneAndStayNearFlash) {
  const DType dtype = dtype_for(GetParam());
  const auto model = load(GetParam(), dtype);
  const Tensor both = run(model, make_inputs(-1));
  const Tensor a0 = run(model, make_inputs(0)), a1 = run(model, make_inputs(1));
  const double e0 = rel_l2(both.narrow0(0, 1), a0), e1 = rel_l2(both.narrow0(1, 1), a1);
  const auto flash = load("FLASH_ATTN", dtype);
  const double vs_flash = rel_l2(both, run(flash, make_inputs(-1)));
  std::printf("[hv15 d64 %s %s] batched vs alone: %.3g, %.3g; vs FLASH_ATTN: %.3g\n", dtype_name(dtype).data(), GetParam().c_str(), e0, e1,
              vs_flash);
  // bf16 activations: batching may round a GEMM differently (~1e-3); an ignored mask moves item 1 by far more.
  EXPECT_LE(e0, 1e-2);
  EXPECT_LE(e1, 1e-2);
  EXPECT_LE(vs_flash, GetParam() == "SAGE_ATTN" ? 5e-2 : 1e-2);
  EXPECT_GT(rel_l2(a0, a1), 0.1);  // the items differ, so the comparison means something
}

INSTANTIATE_TEST_SUITE_P(All, Hv15Backends, ::testing::Values("FLASH_ATTN", "TORCH_SDPA", "SAGE_ATTN", "SPARSE_BLOCK"));

// The mask is not optional: the same batch with item 1's padding made valid (a backend ignoring the
// mask would compute this) differs from the masked result.
TEST(Hv15Backends, IgnoringTheMaskWouldBeVisible) {
  const auto model = load("SAGE_ATTN", DType::BF16);
  Inputs masked = make_inputs(-1), unmasked = masked;
  std::vector<float> m1(80, 1.0f);
  unmasked.text.encoder_attention_mask = Tensor::from_f32(m1, {2, 40});
  EXPECT_GT(rel_l2(run(model, masked).narrow0(1, 1), run(model, unmasked).narrow0(1, 1)), 0.05);
}

}  // namespace
}  // namespace dattn::testing
