#pragma once
// Milliseconds since construction, for the pipeline's per-stage times.
#include <chrono>

namespace dattn::pipeline {

class StageClock {
 public:
  double ms() const { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace dattn::pipeline
