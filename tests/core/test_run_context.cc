// RunContext without a GPU: the process defaults, the thread binding (ContextScope nesting and
// restoration, per thread, per device kind) and creation errors.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "dattn/core/device.h"
#include "dattn/core/error.h"
#include "dattn/core/run_context.h"

namespace dattn {
namespace {

struct Marker final : RunContext::Extension {
  int value = 0;
  explicit Marker(int v) : value(v) {}
};
constexpr char kMarkerKey = 0;

TEST(RunContext, CurrentIsTheProcessDefaultWhenNothingIsBound) {
  RunContext& a = current_context(Device::CPU);
  EXPECT_EQ(&a, &current_context(Device::CPU)) << "one default, made once";
  EXPECT_EQ(&a, &default_context(Device::CPU));
  EXPECT_EQ(a.device(), Device::CPU);
  EXPECT_EQ(a.device_index(), 0);
  EXPECT_EQ(a.stream(), nullptr);
  a.synchronize();  // no-op on the CPU
  EXPECT_EQ(a.bytes_in_use(), 0u);
}

TEST(RunContext, ScopesNestAndRestoreTheBinding) {
  RunContext& fallback = current_context(Device::CPU);
  const auto outer = RunContext::create(Device::CPU);
  const auto inner = RunContext::create(Device::CPU);
  ASSERT_NE(outer.get(), inner.get());
  {
    const ContextScope a(*outer);
    EXPECT_EQ(&current_context(Device::CPU), outer.get());
    {
      const ContextScope b(*inner);
      EXPECT_EQ(&current_context(Device::CPU), inner.get());
      {
        const ContextScope again(*outer);  // the same context bound twice nests too
        EXPECT_EQ(&current_context(Device::CPU), outer.get());
      }
      EXPECT_EQ(&current_context(Device::CPU), inner.get());
    }
    EXPECT_EQ(&current_context(Device::CPU), outer.get());
  }
  EXPECT_EQ(&current_context(Device::CPU), &fallback) << "the default comes back after the last scope";
}

TEST(RunContext, TheBindingIsPerThread) {
  const auto mine = RunContext::create(Device::CPU);
  const ContextScope scope(*mine);
  const RunContext* seen_there = nullptr;
  std::thread other([&] { seen_there = &current_context(Device::CPU); });
  other.join();
  EXPECT_EQ(seen_there, &default_context(Device::CPU)) << "another thread does not see this thread's binding";
  EXPECT_EQ(&current_context(Device::CPU), mine.get());
}

TEST(RunContext, ExtensionsAreMadeOncePerContext) {
  const auto a = RunContext::create(Device::CPU);
  const auto b = RunContext::create(Device::CPU);
  EXPECT_EQ(a->extension(&kMarkerKey), nullptr);
  int made = 0;
  const auto make = [&](int v) {
    return [&made, v] {
      ++made;
      return std::make_unique<Marker>(v);
    };
  };
  Marker& first = a->extension_or<Marker>(&kMarkerKey, make(1));
  Marker& again = a->extension_or<Marker>(&kMarkerKey, make(2));
  EXPECT_EQ(&first, &again);
  EXPECT_EQ(again.value, 1);
  EXPECT_EQ(b->extension_or<Marker>(&kMarkerKey, make(3)).value, 3) << "each context has its own slot";
  EXPECT_EQ(made, 2);
  EXPECT_EQ(a->extension(&kMarkerKey), &first);
  a->set_extension(&kMarkerKey, std::make_unique<Marker>(4));
  EXPECT_EQ(static_cast<Marker*>(a->extension(&kMarkerKey))->value, 4);
}

TEST(RunContext, MemoryCountersTrackNowAndPeak) {
  MemoryCounter c;
  c.add(100);
  c.add(50);
  c.sub(120);
  EXPECT_EQ(c.in_use(), 30u);
  EXPECT_EQ(c.peak(), 150u);
  c.reset_peak();
  EXPECT_EQ(c.peak(), 30u);
}

std::string create_error(Device device, int index) {
  try {
    RunContext::create(device, index);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(RunContext, CreationRefusesIndicesThatAreNotThere) {
  EXPECT_NE(create_error(Device::CPU, 1).find("cpu device index 1, expected 0"), std::string::npos);
  const std::string far = create_error(Device::CUDA, 99);
  if (!built_with_cuda())
    EXPECT_NE(far.find("built without CUDA"), std::string::npos) << far;
  else
    EXPECT_NE(far.find("cuda device index 99 is not a visible device"), std::string::npos) << far;
  EXPECT_NE(create_error(Device::CUDA, -1), "");
  if (cuda_device_count() == 0) {
    EXPECT_NE(create_error(Device::CUDA, 0), "") << "no device: a CUDA context is an error, not a silent CPU one";
    EXPECT_THROW(current_context(Device::CUDA), UserError);
  }
}

}  // namespace
}  // namespace dattn
