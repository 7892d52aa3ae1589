// Wan transformer forward semantics beyond the golden cases: batch > 1 is the batch items run one by one,
// a [1] timestep is shared by the batch, the intermediate hook changes nothing, and bad inputs are
// errors that say what was expected.
#include <random>

#include <gtest/gtest.h>

#include "models/wan_golden.h"
#include "ops/op_test_util.h"

namespace dattn::testing {
namespace {

Tensor concat0(const Tensor& a, const Tensor& b) {
  auto va = a.to_f64_vector(), vb = b.to_f64_vector();
  va.insert(va.end(), vb.begin(), vb.end());
  Shape s = a.shape();
  s[0] += b.dim(0);
  return Tensor::from_f64(va, s, DType::F64);
}

double rel_l2(const Tensor& got, const Tensor& want) {
  const auto g = got.to_f64_vector(), w = want.to_f64_vector();
  return compare(g.data(), w.data(), g.size()).rel_l2;
}

class WanForward : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = std::make_unique<WanTransformer>(WanTransformer::load(wan_tiny_transformer_dir(), {}));
    SafetensorsFile f(wan_case_path("ti2v_token_t"));
    base_ = read_wan_case(f);
    std::mt19937_64 rng(test::fresh_seed());
    other_hidden_ = random_tensor(base_.hidden_states.shape(), DType::F64, rng).t;
    other_text_ = random_tensor(base_.encoder_hidden_states.shape(), DType::F64, rng).t;
  }
  std::unique_ptr<WanTransformer> model_;
  WanCase base_;
  Tensor other_hidden_, other_text_;
};

TEST_F(WanForward, BatchOfTwoEqualsTwoSingleRuns) {
  // Scalar timesteps, one per batch item.
  const Tensor t0 = Tensor::from_f64({700.0}, {1}, DType::F64), t1 = Tensor::from_f64({17.0}, {1}, DType::F64);
  const Tensor a = model_->forward(base_.hidden_states, t0, base_.encoder_hidden_states);
  const Tensor b = model_->forward(other_hidden_, t1, other_text_);
  const Tensor ab = model_->forward(concat0(base_.hidden_states, other_hidden_),
                                    Tensor::from_f64({700.0, 17.0}, {2}, DType::F64),
                                    concat0(base_.encoder_hidden_states, other_text_));
  ASSERT_EQ(ab.dim(0), 2);
  EXPECT_LE(rel_l2(ab.narrow0(0, 1), a), 1e-6);
  EXPECT_LE(rel_l2(ab.narrow0(1, 1), b), 1e-6);
  // Per-token timesteps, different per batch item.
  const Tensor tt = base_.timestep;  // [1, 72]: 0 then 500
  auto tv = tt.to_f64_vector();
  for (auto& v : tv) v = v == 0 ? 250.0 : 999.0;
  const Tensor tt2 = Tensor::from_f64(tv, tt.shape(), DType::F64);
  const Tensor c = model_->forward(base_.hidden_states, tt, base_.encoder_hidden_states);
  const Tensor d = model_->forward(other_hidden_, tt2, other_text_);
  const Tensor cd = model_->forward(concat0(base_.hidden_states, other_hidden_), concat0(tt, tt2),
                                    concat0(base_.encoder_hidden_states, other_text_));
  EXPECT_LE(rel_l2(cd.narrow0(0, 1), c), 1e-6);
  EXPECT_LE(rel_l2(cd.narrow0(1, 1), d), 1e-6);
  // The batch items differ, so the comparison above could fail.
  EXPECT_GT(rel_l2(cd.narrow0(0, 1), cd.narrow0(1, 1)), 0.1);
}

TEST_F(WanForward, OneTimestepIsSharedByTheBatchAndEqualsPerTokenConstant) {
  const Tensor h2 = concat0(base_.hidden_states, other_hidden_), e2 = concat0(base_.encoder_hidden_states, other_text_);
  const Tensor shared = model_->forward(h2, Tensor::from_f64({321.0}, {1}, DType::F64), e2);
  const Tensor both = model_->forward(h2, Tensor::from_f64({321.0, 321.0}, {2}, DType::F64), e2);
  EXPECT_EQ(rel_l2(shared, both), 0.0);
  // A per-token timestep that is the same everywhere is the scalar case (diffusers' two code paths agree).
  const Tensor per_token = model_->forward(h2, Tensor::from_f64(std::vector<double>(144, 321.0), {2, 72}, DType::F64), e2);
  EXPECT_LE(rel_l2(per_token, both), 1e-7);
}

TEST_F(WanForward, CaptureChangesNothing) {
  Recording rec;
  const Tensor with = model_->forward(base_.hidden_states, base_.timestep, base_.encoder_hidden_states, rec.hook());
  const Tensor without = model_->forward(base_.hidden_states, base_.timestep, base_.encoder_hidden_states);
  EXPECT_EQ(rel_l2(with, without), 0.0);
  EXPECT_EQ(rec.order.front(), "rope.cos");
  EXPECT_EQ(rec.values.at("condition_embedder.timestep_proj").shape(), (Shape{1, 72, 768}));
  EXPECT_EQ(rec.values.at("blocks.1.attn_cross.k").shape(), (Shape{1, 12, 2, 64}));
}

TEST_F(WanForward, BadInputsSayWhatWasExpected) {
  const Tensor& h = base_.hidden_states;
  const Tensor& e = base_.encoder_hidden_states;
  const Tensor t = Tensor::from_f64({1.0}, {1}, DType::F64);
  EXPECT_EQ(user_error([&] { model_->forward(Tensor::zeros({1, 4, 3, 8, 12}, DType::F32), t, e); }),
            "hidden_states [1,4,3,8,12] fp32 cpu: expected [B, 8, F, H, W] (in_channels in config.json)");
  EXPECT_EQ(user_error([&] { model_->forward(Tensor::zeros({1, 8, 3, 7, 12}, DType::F32), t, e); }),
            "hidden_states [1,8,3,7,12] fp32 cpu: frames, height and width must be positive multiples of patch_size "
            "[1,2,2]");
  EXPECT_EQ(user_error([&] { model_->forward(h, Tensor::zeros({1, 71}, DType::F32), e); }),
            "timestep [1,71] fp32 cpu: expected [1] or per token [1,72]");
  EXPECT_EQ(user_error([&] { model_->forward(h, t, Tensor::zeros({1, 12, 16}, DType::F32)); }),
            "encoder_hidden_states [1,12,16] fp32 cpu: expected [1,L,32] (batch of hidden_states, text_dim in "
            "config.json)");
  EXPECT_EQ(user_error([&] { model_->forward(Tensor::zeros({1, 8, 1, 2050, 2}, DType::F32), t, e); }),
            "the latent grid has 1025 patches in height, more than rope_max_seq_len = 1024 in config.json");
}

}  // namespace
}  // namespace dattn::testing
