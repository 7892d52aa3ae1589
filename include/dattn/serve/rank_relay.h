#pragma once
// `dattn serve` over several ranks (docs/parallel.md, "dattn serve"): rank 0 serves HTTP and keeps the
// queue; every request it runs is first sent to the other ranks, which run it with it, since each
// generation's collectives need every rank of the world.
//
//   rank 0:  server.load([&] { return std::make_unique<RelayedPipeline>(load_pipeline(dir, o), world); });
//            ... SIGTERM, server.shutdown() ...
//            release_followers(*world);
//   others:  follow_runs(*load_pipeline(dir, o), *world);   // returns at release_followers
//
// The ranks stay at the same collective because they decide the same things: the same request, checked on
// every rank and run by all or none (the check reads each rank's own free memory, so the ranks agree on its
// answers first; a request one rank refuses is refused to the client), and cancelling (DELETE, shutdown) decided by rank 0
// before every step and sent to the others, so all stop at the same step. A failure that only one rank may
// see (an internal error) could leave the ranks at different collectives: that rank then ends its process
// with the error, and mpirun ends the others (the server with them; jobs left unfinished are marked
// failed at the next start, as after kill -9).
#include <memory>
#include <string>

#include "dattn/parallel/communicator.h"
#include "dattn/pipeline/pipeline.h"

namespace dattn::serve {

// The request as rank 0 sends it: every field, in JSON (doubles and the 64-bit seed exactly). Requests
// with initial latents are not sent (a server never takes them): std::invalid_argument.
std::string encode_request(const GenerationRequest& request);
// The request encode_request wrote; std::invalid_argument when `text` is not one.
GenerationRequest decode_request(const std::string& text);

// Rank 0's pipeline: `inner` (loaded on this rank), whose run() first sends the request to the other
// ranks of `world` and agrees on cancelling with them before every step. Everything else is `inner`'s.
class RelayedPipeline final : public Pipeline {
 public:
  RelayedPipeline(std::unique_ptr<Pipeline> inner, std::shared_ptr<parallel::Communicator> world);

  const std::string& class_name() const override { return inner_->class_name(); }
  const std::string& model_dir() const override { return inner_->model_dir(); }
  const PipelineOptions& options() const override { return inner_->options(); }
  RunContext& context() const override { return inner_->context(); }
  std::vector<Resolution> attention() const override { return inner_->attention(); }
  double default_guidance_scale() const override { return inner_->default_guidance_scale(); }
  void check(const GenerationRequest& request) const override { inner_->check(request); }
  Shape latent_shape(const GenerationRequest& request) const override { return inner_->latent_shape(request); }
  GenerationResult run(const GenerationRequest& request, const ProgressObserver& observer = {}) override;

 private:
  std::unique_ptr<Pipeline> inner_;
  std::shared_ptr<parallel::Communicator> world_;
};

// On rank 0, after its last run (the queue stopped): the other ranks' follow_runs return.
void release_followers(parallel::Communicator& world);

// On ranks other than 0: runs each request rank 0 sends on `pipeline` (its progress unreported, its frames
// dropped: rank 0 writes them) until release_followers. Throws an error rank 0 cannot have seen alike.
void follow_runs(Pipeline& pipeline, parallel::Communicator& world);

}  // namespace dattn::serve
