// dattn serve's rank relay under mpirun (the binary of collectives_under_mpirun.cc): a request that one rank
// alone refuses. Pipeline::check reads each rank's own free memory, so the ranks can answer differently; a
// rank that refused alone went back to waiting while rank 0 ran the job and waited for it at the first
// collective, forever (the server hung). Now every rank runs the request or none does.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/parallel/world.h"
#include "dattn/pipeline/pipeline.h"
#include "dattn/serve/rank_relay.h"
#include "parallel/mpi/mpi_world.h"

namespace dattn::testing {
namespace {

// A pipeline whose check refuses the prompt "refused on rank R" on rank R only, and whose run is one
// collective (a sum over the world): ranks out of step would hang there or pair the wrong runs.
class OneCollectivePipeline final : public Pipeline {
 public:
  explicit OneCollectivePipeline(std::shared_ptr<parallel::Communicator> world)
      : world_(std::move(world)), context_(RunContext::create(Device::CPU)) {}
  const std::string& class_name() const override { return name_; }
  const std::string& model_dir() const override { return name_; }
  const PipelineOptions& options() const override { return options_; }
  RunContext& context() const override { return *context_; }
  std::vector<Resolution> attention() const override { return {}; }
  double default_guidance_scale() const override { return 1.0; }
  void check(const GenerationRequest& r) const override {
    if (r.prompt == "refused on rank " + std::to_string(world_->rank())) throw UserError("too little memory here");
  }
  Shape latent_shape(const GenerationRequest&) const override { return {1}; }
  GenerationResult run(const GenerationRequest& r, const ProgressObserver&) override {
    check(r);
    Tensor seed = Tensor::empty({1}, DType::F64);
    seed.data_as<double>()[0] = static_cast<double>(r.seed);
    world_->all_reduce_sum(seed);  // every rank sent the same seed: the sum is size x seed
    GenerationResult result;
    result.frames = seed;
    return result;
  }

 private:
  std::shared_ptr<parallel::Communicator> world_;
  std::shared_ptr<RunContext> context_;
  PipelineOptions options_;
  std::string name_ = "one-collective";
};

GenerationRequest request(const std::string& prompt, std::uint64_t seed) {
  GenerationRequest r;
  r.prompt = prompt;
  r.seed = seed;
  return r;
}

TEST(MpiRankRelay, ARequestOneRankRefusesRunsOnNoRank) {
  if (!parallel::built_with_mpi()) GTEST_SKIP() << "this build has no MPI";
  ASSERT_EQ(g_world->size(), g_expected_ranks);
  const int last = g_world->size() - 1;
  if (g_world->rank() != 0) {
    OneCollectivePipeline pipeline(g_world);
    serve::follow_runs(pipeline, *g_world);  // returns at release_followers
    return;
  }
  serve::RelayedPipeline relayed(std::make_unique<OneCollectivePipeline>(g_world), g_world);
  try {
    relayed.run(request("refused on rank " + std::to_string(last), 3));
    ADD_FAILURE() << "a request rank " << last << " refused ran";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("1 of the " + std::to_string(g_world->size()) + " ranks cannot run this request"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(relayed.run(request("refused on rank 0", 4)), UserError);  // rank 0's own refusal, as before
  // The ranks are still in step: the next request runs on all of them.
  const GenerationResult ok = relayed.run(request("fine", 5));
  EXPECT_EQ(ok.frames.data_as<double>()[0], 5.0 * g_world->size());
  serve::release_followers(*g_world);
}

}  // namespace
}  // namespace dattn::testing
