// What --device auto and --dtype auto mean (the defaults of generate and transformer).
#include <gtest/gtest.h>

#include "dattn/core/auto_choice.h"

namespace dattn {
namespace {

TEST(AutoChoice, DeviceIsCudaWhenOneIsVisible) {
  EXPECT_EQ(auto_device(0), Device::CPU);
  EXPECT_EQ(auto_device(1), Device::CUDA);
  EXPECT_EQ(auto_device(8), Device::CUDA);
  // This build and machine: the CPU unless a CUDA device is visible (CI and this CPU build: the CPU).
  EXPECT_EQ(auto_device(), cuda_device_count() > 0 ? Device::CUDA : Device::CPU);
  if (!built_with_cuda()) {
    EXPECT_EQ(auto_device(), Device::CPU);
  }
}

TEST(AutoChoice, DtypeIsBf16OnCudaAndFp32OnTheCpu) {
  EXPECT_EQ(auto_run_dtype(Device::CUDA), DType::BF16);
  EXPECT_EQ(auto_run_dtype(Device::CPU), DType::F32);
}

}  // namespace
}  // namespace dattn
