#include "dattn/core/stage_timer.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "core/stage_timer_events.h"
#include "dattn/core/error.h"
#include "dattn/core/run_context.h"

namespace dattn {
namespace {

struct Record {
  const char* stage = nullptr;
  double begin_ms = 0, end_ms = 0;  // CPU mode
  // CUDA mode: the context current when the scope began; its events and stream time the scope. Held,
  // so that a context ending before collect() leaves its events readable.
  std::shared_ptr<RunContext> context;
};

// Only the thread that called enable() records: a load running ahead on another thread (its own time is
// reported apart) would otherwise race on `records` and mix its work into the stage being timed.
struct State {
  std::atomic<bool> on{false};
  std::thread::id owner;  // written before `on` is set, read after it is seen set
  Device device = Device::CPU;
  std::vector<Record> records;
};

bool records_here(const State& s) { return s.on.load(std::memory_order_acquire) && std::this_thread::get_id() == s.owner; }

State& state() {
  static State s;
  return s;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void StageTimer::enable(Device device) {
  State& s = state();
  if (device == Device::CUDA && !built_with_cuda()) throw UserError("stage timing on cuda: built without CUDA");
  s.on.store(false, std::memory_order_release);
  s.owner = std::this_thread::get_id();
  s.device = device;
  s.records.clear();
  s.on.store(true, std::memory_order_release);
}

void StageTimer::disable() { state().on.store(false, std::memory_order_release); }
bool StageTimer::enabled() { return state().on.load(std::memory_order_acquire); }

std::map<std::string, double> StageTimer::collect() {
  State& s = state();
  std::map<std::string, double> out;
  for (std::size_t i = 0; i < s.records.size(); ++i) {
    const Record& r = s.records[i];
    out[r.stage] += r.context ? stage_events::elapsed_ms(*r.context, i) : r.end_ms - r.begin_ms;
  }
  s.records.clear();
  return out;
}

StageScope::StageScope(const char* stage) {
  State& s = state();
  if (!records_here(s)) return;
  stage_ = stage;
  slot_ = static_cast<long long>(s.records.size());
  Record& r = s.records.emplace_back();
  r.stage = stage;
  if (s.device == Device::CUDA) {
    r.context = current_context(Device::CUDA).shared_from_this();
    stage_events::begin(*r.context, static_cast<std::size_t>(slot_));
  } else {
    r.begin_ms = now_ms();
  }
}

StageScope::~StageScope() {
  if (slot_ < 0) return;
  State& s = state();
  if (!records_here(s) || static_cast<std::size_t>(slot_) >= s.records.size()) return;  // collected meanwhile
  Record& r = s.records[static_cast<std::size_t>(slot_)];
  if (r.context)
    stage_events::end(*r.context, static_cast<std::size_t>(slot_));
  else
    r.end_ms = now_ms();
}

}  // namespace dattn
