// --dtype auto on CUDA gives bf16, which every backend takes there: the seed's command
// (DIFFUSION_ATTENTION_BACKEND=SAGE_ATTN dattn generate ... without --dtype) runs on a GPU. In fp32
// SAGE_ATTN refuses every layer and the platform default falls to TORCH_SDPA.
#include <algorithm>

#include <gtest/gtest.h>

#include "dattn/attention/registry.h"
#include "dattn/core/auto_choice.h"

namespace dattn {
namespace {

TEST(AutoDtype, EveryBackendTakesTheAutoDtypeOnCuda) {
  const DType t = auto_run_dtype(Device::CUDA);
  for (const AttentionBackend* b : registered_backends()) {
    const auto dtypes = b->surface(Device::CUDA).dtypes;
    EXPECT_NE(std::find(dtypes.begin(), dtypes.end(), t), dtypes.end()) << b->name() << " on cuda";
  }
  const auto sage = backend_by_name("SAGE_ATTN").surface(Device::CUDA).dtypes;
  EXPECT_EQ(std::find(sage.begin(), sage.end(), DType::F32), sage.end()) << "the reason auto is not fp32 on cuda";
}

}  // namespace
}  // namespace dattn
