// The `kernel` extra of FLASH_ATTN and SAGE_ATTN: declared with type, default and range, validated like
// every extra (unknown values and wrong types are errors naming the key), and refused on the CPU where it
// names a CUDA-only kernel. No GPU needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dattn/attention/backend.h"
#include "dattn/attention/registry.h"
#include "dattn/core/error.h"
#include "dattn/core/tensor.h"

namespace dattn {
namespace {

using nlohmann::json;

std::string validation_error(const char* backend, const json& extra) {
  try {
    validate_extra(backend_by_name(backend), extra, "role 'self'");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(KernelExtra, FlashAndSageDeclareIt) {
  for (const char* name : {"FLASH_ATTN", "SAGE_ATTN"}) {
    SCOPED_TRACE(name);
    const auto keys = backend_by_name(name).extra_keys();
    ASSERT_EQ(keys.size(), 1u);
    EXPECT_EQ(keys[0].name, "kernel");
    EXPECT_EQ(keys[0].type, ExtraKey::Type::String);
    EXPECT_EQ(keys[0].default_value, json("auto"));
    EXPECT_EQ(keys[0].range, "auto, hopper or portable");
    EXPECT_FALSE(keys[0].help.empty());
    EXPECT_EQ(extra_with_defaults(backend_by_name(name), json::object()), json({{"kernel", "auto"}}));
  }
}

TEST(KernelExtra, ValuesAreValidated) {
  for (const char* name : {"FLASH_ATTN", "SAGE_ATTN"}) {
    SCOPED_TRACE(name);
    for (const char* ok : {"auto", "hopper", "portable"}) EXPECT_EQ(validation_error(name, {{"kernel", ok}}), "");
    const std::string bad = validation_error(name, {{"kernel", "fast"}});
    EXPECT_NE(bad.find("'kernel'"), std::string::npos) << bad;
    EXPECT_NE(bad.find(name), std::string::npos) << bad;
    EXPECT_NE(bad.find("\"fast\""), std::string::npos) << bad;
    EXPECT_NE(bad.find("must be auto, hopper or portable"), std::string::npos) << bad;
    const std::string case_matters = validation_error(name, {{"kernel", "Hopper"}});
    EXPECT_NE(case_matters, "") << "no silent case folding";
    const std::string type = validation_error(name, {{"kernel", 1}});
    EXPECT_NE(type.find("is not a string"), std::string::npos) << type;
    EXPECT_NE(validation_error("SPARSE_BLOCK", {{"block_size", 64.5}}).find("is not an integer"), std::string::npos);
  }
  const std::string unknown = validation_error("SPARSE_BLOCK", {{"kernel", "auto"}});
  EXPECT_NE(unknown.find("Unknown extra key 'kernel'"), std::string::npos) << unknown;
}

// TORCH_SDPA's kernels are its own: gemm or rows on CUDA (the CUDA tests run both), auto the default.
TEST(KernelExtra, TorchSdpaDeclaresGemmAndRows) {
  const auto keys = backend_by_name("TORCH_SDPA").extra_keys();
  ASSERT_EQ(keys.size(), 1u);
  EXPECT_EQ(keys[0].name, "kernel");
  EXPECT_EQ(keys[0].default_value, json("auto"));
  EXPECT_EQ(keys[0].range, "auto, gemm or rows");
  for (const char* ok : {"auto", "gemm", "rows"}) EXPECT_EQ(validation_error("TORCH_SDPA", {{"kernel", ok}}), "");
  const std::string bad = validation_error("TORCH_SDPA", {{"kernel", "hopper"}});
  EXPECT_NE(bad.find("must be auto, gemm or rows"), std::string::npos) << bad;
}

// A 1 x 4 x 1 x 8 fp32 problem on the host; `out` receives the result.
AttentionProblem tiny_problem(std::vector<float>& q, std::vector<float>& out) {
  q.resize(32);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  out.assign(32, 0.0f);
  AttentionProblem p;
  p.shape.batch = 1;
  p.shape.seq_q = p.shape.seq_k = 4;
  p.shape.heads_q = p.shape.heads_kv = 1;
  p.shape.head_dim = 8;
  p.shape.dtype = DType::F32;
  p.q = p.k = p.v = q.data();
  p.out = out.data();
  return p;
}

TEST(KernelExtra, CpuRunsAutoAndPortableAndRefusesHopper) {
  std::vector<float> q, out_auto, out_portable;
  const AttentionBackend& flash = backend_by_name("FLASH_ATTN");
  run_attention(flash, tiny_problem(q, out_auto), json({{"kernel", "auto"}}), Device::CPU);
  run_attention(flash, tiny_problem(q, out_portable), json({{"kernel", "portable"}}), Device::CPU);
  EXPECT_EQ(out_auto, out_portable) << "the CPU has one kernel";
  std::vector<float> out;
  try {
    run_attention(flash, tiny_problem(q, out), json({{"kernel", "hopper"}}), Device::CPU);
    ADD_FAILURE() << "kernel 'hopper' ran on the CPU";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'hopper'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
  }
}

TEST(KernelExtra, TorchSdpaOnTheCpuRunsAutoOnly) {
  const AttentionBackend& sdpa = backend_by_name("TORCH_SDPA");
  std::vector<float> q, out;
  run_attention(sdpa, tiny_problem(q, out), json({{"kernel", "auto"}}), Device::CPU);
  for (const char* cuda_only : {"gemm", "rows"}) {
    std::vector<float> q2, out2;
    try {
      run_attention(sdpa, tiny_problem(q2, out2), json({{"kernel", cuda_only}}), Device::CPU);
      ADD_FAILURE() << "kernel '" << cuda_only << "' ran on the CPU";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("kernel '") + cuda_only + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
    }
    EXPECT_EQ(out2, std::vector<float>(32, 0.0f)) << "nothing written";
  }
}

}  // namespace
}  // namespace dattn
