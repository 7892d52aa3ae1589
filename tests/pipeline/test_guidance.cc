// The guidance strategies against a Denoiser that records its calls: sequential makes two batch-1
// predictions per step, batched one batch-2 prediction on [cond; uncond], both combine them as
// uncond + g (cond - uncond), and without an unconditional input each makes one conditional prediction.
#include <vector>

#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/pipeline/guidance.h"

namespace dattn::testing {
namespace {

// velocity = latents * text (broadcast over the channel dims), so cond and uncond differ by their text.
class RecordingDenoiser final : public Denoiser {
 public:
  mutable std::vector<std::int64_t> batches;
  Tensor predict(const Tensor& latents, double, const Conditioning& c) const override {
    batches.push_back(latents.dim(0));
    const std::vector<float> x = latents.to_f32_vector(), t = c.at("text").to_f32_vector();
    const std::int64_t per_item = latents.numel() / latents.dim(0);
    std::vector<float> v(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) v[i] = x[i] * t[i / per_item];
    return Tensor::from_f32(v, latents.shape());
  }
  std::vector<Resolution> attention_resolutions() const override { return {}; }
};

Conditioning text(float value) {
  Conditioning c;
  c.tensors["text"] = Tensor::from_f32({value}, {1, 1});
  return c;
}

TEST(Guidance, SequentialAndBatchedCallTheModelAsTheyPromiseAndAgree) {
  const Tensor latents = Tensor::from_f32({1.0f, -2.0f, 0.5f, 3.0f}, {1, 4});
  const Conditioning cond = text(3.0f), uncond = text(1.0f);
  const std::vector<float> want = {1 + 5 * (3 - 1), -2 + 5 * (-6 + 2), 0.5f + 5 * (1.5f - 0.5f), 3 + 5 * (9 - 3)};
  for (GuidanceMode mode : {GuidanceMode::Sequential, GuidanceMode::Batched}) {
    SCOPED_TRACE(std::string(guidance_mode_name(mode)));
    RecordingDenoiser model;
    const auto g = make_guidance(mode);
    EXPECT_EQ(g->mode(), mode);
    g->prepare(cond, &uncond);
    EXPECT_EQ(g->velocity(model, latents, 500.0, 5.0).to_f32_vector(), want);
    const std::vector<std::int64_t> calls =
        mode == GuidanceMode::Batched ? std::vector<std::int64_t>{2} : std::vector<std::int64_t>{1, 1};
    EXPECT_EQ(model.batches, calls);
    model.batches.clear();
    g->prepare(cond, nullptr);  // no guidance: the conditional prediction alone
    EXPECT_EQ(g->velocity(model, latents, 500.0, 5.0).to_f32_vector(), (std::vector<float>{3, -6, 1.5f, 9}));
    EXPECT_EQ(model.batches, std::vector<std::int64_t>{1});
  }
}

TEST(Guidance, NamesParseAndCfgParallelIsRefusedWithTheReason) {
  for (GuidanceMode m : {GuidanceMode::Sequential, GuidanceMode::Batched, GuidanceMode::CfgParallel})
    EXPECT_EQ(parse_guidance_mode(guidance_mode_name(m)), m);
  EXPECT_FALSE(parse_guidance_mode("parallel"));
  try {
    make_guidance(GuidanceMode::CfgParallel);
    ADD_FAILURE() << "cfg-parallel accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("--cfg-parallel-size 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dattn::testing
