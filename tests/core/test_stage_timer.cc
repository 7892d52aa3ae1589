// StageTimer on the CPU: scopes add up per stage, nothing is recorded while disabled, collect() starts
// afresh.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "dattn/core/stage_timer.h"

namespace dattn {
namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(StageTimer, SumsScopesPerStageOnCpu) {
  StageTimer::enable(Device::CPU);
  for (int i = 0; i < 2; ++i) {
    const StageScope s("gemm");
    sleep_ms(20);
  }
  {
    const StageScope s("attention");
    sleep_ms(10);
  }
  auto t = StageTimer::collect();
  EXPECT_GE(t["gemm"], 39.0);
  EXPECT_LT(t["gemm"], 1000.0);
  EXPECT_GE(t["attention"], 9.0);
  EXPECT_TRUE(StageTimer::collect().empty()) << "collect() must start afresh";
  StageTimer::disable();
  {
    const StageScope s("gemm");
  }
  EXPECT_TRUE(StageTimer::collect().empty()) << "a disabled timer records nothing";
}

}  // namespace
}  // namespace dattn
