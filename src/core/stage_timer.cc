#include "dattn/core/stage_timer.h"

#include <chrono>
#include <vector>

#include "core/stage_timer_events.h"
#include "dattn/core/error.h"

namespace dattn {
namespace {

struct Record {
  const char* stage;
  double begin_ms = 0, end_ms = 0;  // CPU mode
};

struct State {
  bool on = false;
  Device device = Device::CPU;
  std::vector<Record> records;
};

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
  s.on = true;
  s.device = device;
  s.records.clear();
  if (device == Device::CUDA) stage_events::reset();
}

void StageTimer::disable() { state().on = false; }
bool StageTimer::enabled() { return state().on; }

std::map<std::string, double> StageTimer::collect() {
  State& s = state();
  std::map<std::string, double> out;
  if (s.device == Device::CUDA) {
    const std::vector<double> ms = stage_events::elapsed_ms(s.records.size());
    for (std::size_t i = 0; i < s.records.size(); ++i) out[s.records[i].stage] += ms[i];
    stage_events::reset();
  } else {
    for (const Record& r : s.records) out[r.stage] += r.end_ms - r.begin_ms;
  }
  s.records.clear();
  return out;
}

StageScope::StageScope(const char* stage) {
  State& s = state();
  if (!s.on) return;
  stage_ = stage;
  slot_ = static_cast<long long>(s.records.size());
  s.records.push_back({stage});
  if (s.device == Device::CUDA)
    stage_events::begin(static_cast<std::size_t>(slot_));
  else
    s.records.back().begin_ms = now_ms();
}

StageScope::~StageScope() {
  if (slot_ < 0) return;
  State& s = state();
  if (!s.on || static_cast<std::size_t>(slot_) >= s.records.size()) return;  // collected meanwhile
  if (s.device == Device::CUDA)
    stage_events::end(static_cast<std::size_t>(slot_));
  else
    s.records[static_cast<std::size_t>(slot_)].end_ms = now_ms();
}

}  // namespace dattn
