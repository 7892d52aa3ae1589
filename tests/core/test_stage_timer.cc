// StageTimer on the CPU: scopes add up per stage, nothing is recorded while disabled, collect() starts
// afresh, and only the enabling thread records (a load running ahead on another thread once raced on the
// records and crashed `generate --op-times --validate-against` on CUDA).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

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

TEST(StageTimer, OnlyTheEnablingThreadRecords) {
  StageTimer::enable(Device::CPU);
  std::atomic<bool> stop{false};
  std::vector<std::thread> others;
  for (int t = 0; t < 4; ++t)
    others.emplace_back([&] {
      while (!stop.load()) {
        const StageScope s("other thread");  // thousands of scopes beside the main thread's
      }
    });
  for (int i = 0; i < 20000; ++i) {
    const StageScope s("main thread");
  }
  stop = true;
  for (std::thread& t : others) t.join();
  const auto times = StageTimer::collect();
  EXPECT_EQ(times.count("other thread"), 0u) << "another thread's scope was recorded";
  EXPECT_EQ(times.count("main thread"), 1u);
  StageTimer::disable();
}

}  // namespace
}  // namespace dattn
