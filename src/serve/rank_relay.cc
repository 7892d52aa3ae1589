// Rank 0 sends each request to the other ranks and decides cancelling for all (see rank_relay.h).
#include "dattn/serve/rank_relay.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/serve/printable.h"

namespace dattn::serve {
namespace {

// What rank 0 sends before each run, and once at the end.
enum Message : std::int64_t { kStop = 0, kRun = 1 };

// How often a rank waiting for the next request looks: a request starts at most this much later on them.
constexpr std::chrono::milliseconds kIdlePoll{2};

// A message header: [kind, bytes of the request that follows]; the same shape on every rank.
Tensor header(std::int64_t kind, std::int64_t bytes) {
  Tensor h = Tensor::empty({2}, DType::F64);
  h.data_as<double>()[0] = static_cast<double>(kind);
  h.data_as<double>()[1] = static_cast<double>(bytes);
  return h;
}

void send(parallel::Communicator& world, Message kind, const std::string& text = {}) {
  Tensor h = header(kind, static_cast<std::int64_t>(text.size()));
  world.broadcast_after_wait(h, 0, kIdlePoll);  // what the waiting ranks call: the two must match
  if (text.empty()) return;
  Tensor bytes = Tensor::empty({static_cast<std::int64_t>(text.size())}, DType::I8);
  std::memcpy(bytes.data(), text.data(), text.size());
  world.broadcast(bytes, 0);
}

// Rank 0's decision, the same on every rank: before every step rank 0 says whether the run stops there.
bool agree(parallel::Communicator& world, bool mine) {
  Tensor flag = Tensor::empty({1}, DType::I8);
  flag.data_as<std::int8_t>()[0] = mine ? 1 : 0;
  world.broadcast(flag, 0);
  return flag.data_as<std::int8_t>()[0] != 0;
}

// How many ranks refuse `request` (Pipeline::check, which also reads this rank's own free memory, so the
// answers can differ); `mine` holds this rank's refusal. Collective over `world`: every rank runs the request
// or none does (a rank that refused alone went back to waiting while the others waited for it in the run).
int refusals(Pipeline& pipeline, const GenerationRequest& request, parallel::Communicator& world,
             std::exception_ptr& mine) {
  Tensor count = Tensor::empty({1}, DType::F64);
  count.data_as<double>()[0] = 0;
  try {
    pipeline.check(request);
  } catch (const UserError&) {
    mine = std::current_exception();
    count.data_as<double>()[0] = 1;
  }
  world.all_reduce_sum(count);
  return static_cast<int>(count.data_as<double>()[0]);
}

// Raised the same way on every rank (the same request and checks; cancelling is agreed): the ranks
// leave the run at the same point and stay in step for the next one.
bool same_on_every_rank(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const UserError&) {
    return true;
  } catch (const RunCancelled&) {
    return true;
  } catch (const NumericError&) {  // the non-finite checks read latents and frames every rank has alike
    return true;
  } catch (...) {
    return false;
  }
}

// Any other failure on rank 0 may have stopped it at a collective the others have passed or not reached:
// no later run could pair them again, so this process ends (the queue's worker cannot throw it to main)
// and mpirun ends the others.
[[noreturn]] void end_world(const std::exception_ptr& error) {
  std::string what = "unknown error";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  std::fprintf(stderr,
               "[dattn serve] internal error in a run: %s; the ranks may be at different collectives, so the "
               "server stops (mpirun ends every rank; jobs left unfinished are failed at the next start)\n",
               what.c_str());
  std::fflush(stderr);
  std::_Exit(70);
}

template <class T>
void put_optional(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

template <class T>
std::optional<T> get_optional(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return std::nullopt;
  return j.at(key).get<T>();
}

}  // namespace

std::string encode_request(const GenerationRequest& r) {
  if (r.initial_latents.defined())
    throw std::invalid_argument("a request with initial latents cannot be sent to the other ranks");
  nlohmann::json j = {{"prompt", r.prompt},     {"negative_prompt", r.negative_prompt},
                      {"height", r.height},     {"width", r.width},
                      {"num_frames", r.num_frames}, {"num_inference_steps", r.num_inference_steps},
                      {"seed", r.seed}};
  put_optional(j, "guidance_scale", r.guidance_scale);
  put_optional(j, "flow_shift", r.flow_shift);
  put_optional(j, "max_sequence_length", r.max_sequence_length);
  // The server refuses prompts that are not UTF-8 before queueing them; strict: any other is an error here.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

GenerationRequest decode_request(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    GenerationRequest r;
    r.prompt = j.at("prompt").get<std::string>();
    r.negative_prompt = j.at("negative_prompt").get<std::string>();
    r.height = j.at("height").get<std::int64_t>();
    r.width = j.at("width").get<std::int64_t>();
    r.num_frames = j.at("num_frames").get<std::int64_t>();
    r.num_inference_steps = j.at("num_inference_steps").get<int>();
    r.seed = j.at("seed").get<std::uint64_t>();
    r.guidance_scale = get_optional<double>(j, "guidance_scale");
    r.flow_shift = get_optional<double>(j, "flow_shift");
    r.max_sequence_length = get_optional<int>(j, "max_sequence_length");
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("not a request sent by rank 0: ") + e.what());
  }
}

RelayedPipeline::RelayedPipeline(std::unique_ptr<Pipeline> inner, std::shared_ptr<parallel::Communicator> world)
    : inner_(std::move(inner)), world_(std::move(world)) {
  if (!inner_ || !world_) throw std::invalid_argument("RelayedPipeline: a pipeline and a world are needed");
  if (world_->rank() != 0) throw std::invalid_argument("RelayedPipeline runs on rank 0; the others follow_runs");
}

GenerationResult RelayedPipeline::run(const GenerationRequest& request, const ProgressObserver& observer) {
  const std::string message = encode_request(request);  // before anything is sent: a refusal leaves no rank waiting
  ProgressObserver relayed = observer;
  relayed.cancelled = [this, asked = observer.cancelled] { return agree(*world_, asked && asked()); };
  try {
    send(*world_, kRun, message);
    std::exception_ptr mine;
    if (const int n = refusals(*inner_, request, *world_, mine); n > 0) {
      if (mine) std::rethrow_exception(mine);
      throw UserError(std::to_string(n) + " of the " + std::to_string(world_->size()) +
                      " ranks cannot run this request (their log says why: e.g. too little free memory on that rank)");
    }
    return inner_->run(request, relayed);
  } catch (...) {
    if (!same_on_every_rank(std::current_exception())) end_world(std::current_exception());
    throw;
  }
}

void release_followers(parallel::Communicator& world) { send(world, kStop); }

void follow_runs(Pipeline& pipeline, parallel::Communicator& world) {
  if (world.rank() == 0) throw std::invalid_argument("follow_runs runs on ranks other than 0");
  for (;;) {
    Tensor h = header(kStop, 0);
    world.broadcast_after_wait(h, 0, kIdlePoll);
    if (static_cast<std::int64_t>(h.data_as<double>()[0]) == kStop) return;
    Tensor bytes = Tensor::empty({static_cast<std::int64_t>(h.data_as<double>()[1])}, DType::I8);
    world.broadcast(bytes, 0);
    const GenerationRequest request =
        decode_request(std::string(static_cast<const char*>(bytes.data()), static_cast<std::size_t>(bytes.numel())));
    std::exception_ptr mine;
    if (refusals(pipeline, request, world, mine) > 0) {  // rank 0 answers the client; no rank runs it
      if (mine) {
        try {
          std::rethrow_exception(mine);
        } catch (const UserError& e) {
          std::fprintf(stderr, "[dattn serve] rank %d refused a request: %s\n", world.rank(), printable(e.what()).c_str());
        }
      }
      continue;
    }
    ProgressObserver observer;
    observer.cancelled = [&world] { return agree(world, false); };
    try {
      pipeline.run(request, observer);
    } catch (...) {
      // Rank 0 saw the same error and reports it to the client. Any other ends this rank: the caller
      // prints it (this rank's stderr is its error stream) and mpirun ends the others.
      if (!same_on_every_rank(std::current_exception())) throw;
    }
  }
}

}  // namespace dattn::serve
