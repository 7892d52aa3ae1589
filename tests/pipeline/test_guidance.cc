// The guidance strategies against a Denoiser that records its calls: sequential makes two batch-1
// predictions per step, batched one batch-2 prediction on [cond; uncond], both combine them as
// uncond + g (cond - uncond), and without an unconditional input each makes one conditional prediction.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/parallel/communicator.h"
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

TEST(Guidance, NamesParseAndCfgParallelIsRefusedWithoutACfgPairWithTheReason) {
  for (GuidanceMode m : {GuidanceMode::Sequential, GuidanceMode::Batched, GuidanceMode::CfgParallel})
    EXPECT_EQ(parse_guidance_mode(guidance_mode_name(m)), m);
  EXPECT_FALSE(parse_guidance_mode("parallel"));
  for (const auto& group : {std::shared_ptr<parallel::Communicator>(), parallel::make_single_process_communicator()}) {
    try {
      make_guidance(GuidanceMode::CfgParallel, group);
      ADD_FAILURE() << "cfg-parallel accepted without a CFG group of 2";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("--cfg-parallel-size 2"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("has 1"), std::string::npos) << e.what();
    }
  }
}

// One rank of a CFG pair, in one process: all_gather puts this rank's tensor and the one the test says
// the other rank computed in rank order.
class FakeCfgPair final : public parallel::Communicator {
 public:
  FakeCfgPair(int rank, Tensor other) : rank_(rank), other_(std::move(other)) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  std::string_view transport() const override { return "fake"; }
  bool moves(Device device) const override { return device == Device::CPU; }
  void all_reduce_sum(Tensor&) override { ADD_FAILURE() << "all_reduce_sum"; }
  Tensor all_gather(const Tensor& local) override {
    std::vector<float> v = (rank_ == 0 ? local : other_).to_f32_vector(), w = (rank_ == 0 ? other_ : local).to_f32_vector();
    v.insert(v.end(), w.begin(), w.end());
    Shape shape = local.shape();
    shape[0] *= 2;
    ++gathers;
    return Tensor::from_f32(v, shape);
  }
  Tensor all_to_all(const Tensor& t, int, int) override { return t; }
  void broadcast(Tensor&, int) override { ADD_FAILURE() << "broadcast"; }
  void barrier() override {}
  std::shared_ptr<Communicator> split(int, int) override { return nullptr; }
  int gathers = 0;

 private:
  int rank_;
  Tensor other_;
};

// Each rank predicts its own branch once per step (rank 0 conditional, rank 1 unconditional) and, with
// the other's prediction gathered, returns the sequential strategy's velocity exactly.
TEST(Guidance, CfgParallelPredictsOneBranchPerRankAndCombinesLikeSequential) {
  const Tensor latents = Tensor::from_f32({1.0f, -2.0f, 0.5f, 3.0f}, {1, 4});
  const Conditioning cond = text(3.0f), uncond = text(1.0f);
  RecordingDenoiser reference;
  const Tensor cond_v = reference.predict(latents, 500.0, cond), uncond_v = reference.predict(latents, 500.0, uncond);
  const auto sequential = make_guidance(GuidanceMode::Sequential);
  sequential->prepare(cond, &uncond);
  const std::vector<float> want = sequential->velocity(reference, latents, 500.0, 5.0).to_f32_vector();
  for (int rank : {0, 1}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    auto pair = std::make_shared<FakeCfgPair>(rank, rank == 0 ? uncond_v : cond_v);
    RecordingDenoiser model;
    const auto g = make_guidance(GuidanceMode::CfgParallel, pair);
    EXPECT_EQ(g->mode(), GuidanceMode::CfgParallel);
    g->prepare(cond, &uncond);
    EXPECT_EQ(g->velocity(model, latents, 500.0, 5.0).to_f32_vector(), want);
    EXPECT_EQ(model.batches, std::vector<std::int64_t>{1});  // one batch-1 forward: its own branch
    EXPECT_EQ(pair->gathers, 1);
    EXPECT_THROW(g->prepare(cond, nullptr), UserError);  // no guidance: nothing to split
  }
}

}  // namespace
}  // namespace dattn::testing
