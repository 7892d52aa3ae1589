// pipeline_vae_dtype: the VAE runs in the run's dtype on CUDA when that is bf16, fp32 otherwise; an
// explicit --vae-dtype wins, checked when the pipeline is built (bf16 is a CUDA dtype).
#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "dattn/pipeline/pipeline.h"

namespace dattn {
namespace {

PipelineOptions options(Device device, DType dtype, std::optional<DType> vae = std::nullopt) {
  PipelineOptions o;
  o.device = device;
  o.dtype = dtype;
  o.vae_dtype = vae;
  return o;
}

TEST(PipelineVaeDtype, FollowsABf16RunOnCudaElseFp32) {
  EXPECT_EQ(pipeline_vae_dtype(options(Device::CUDA, DType::BF16)), DType::BF16);
  EXPECT_EQ(pipeline_vae_dtype(options(Device::CUDA, DType::F32)), DType::F32);
  EXPECT_EQ(pipeline_vae_dtype(options(Device::CUDA, DType::F16)), DType::F32);
  EXPECT_EQ(pipeline_vae_dtype(options(Device::CPU, DType::BF16)), DType::F32);
  EXPECT_EQ(pipeline_vae_dtype(options(Device::CPU, DType::F32)), DType::F32);
}

TEST(PipelineVaeDtype, AnExplicitChoiceWinsAndIsChecked) {
  EXPECT_EQ(pipeline_vae_dtype(options(Device::CUDA, DType::BF16, DType::F32)), DType::F32);
  EXPECT_EQ(pipeline_vae_dtype(options(Device::CUDA, DType::F32, DType::BF16)), DType::BF16);
  EXPECT_EQ(pipeline_vae_dtype(options(Device::CPU, DType::BF16, DType::F32)), DType::F32);
  EXPECT_THROW(pipeline_vae_dtype(options(Device::CPU, DType::F32, DType::BF16)), UserError);
  EXPECT_THROW(pipeline_vae_dtype(options(Device::CUDA, DType::F32, DType::F16)), UserError);
}

}  // namespace
}  // namespace dattn
