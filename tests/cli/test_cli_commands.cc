// `dattn --help`, `dattn backends` and `dattn attention` end to end, including bad input.
#include <algorithm>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

namespace dattn::testing {
namespace {

void expect_user_error(const CliResult& r, const std::string& message) {
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;
}

TEST(CliHelp, TopLevelAndEveryCommandHaveHelp) {
  CliResult top = run_dattn("--help");
  ASSERT_EQ(top.status, 0);
  for (const char* cmd : {"resolve", "backends", "attention"}) {
    EXPECT_NE(top.out.find(cmd), std::string::npos) << cmd;
    CliResult r = run_dattn(std::string(cmd) + " --help");
    EXPECT_EQ(r.status, 0) << cmd;
    EXPECT_NE(r.out.find("--device"), std::string::npos) << cmd;
  }
  CliResult att = run_dattn("attention --help");
  for (const char* opt : {"--shape", "--backend", "--kv-heads", "--dtype", "--key-padding", "--repeat",
                          "--diffusion-attention-backend", "--diffusion-attention-config",
                          "--diffusion-attention-config.per_role.ROLE.extra.KEY"})
    EXPECT_NE(att.out.find(opt), std::string::npos) << opt;
}

TEST(CliHelp, NoCommandOrUnknownCommandIsAUsageError) {
  EXPECT_EQ(run_dattn("").status, 2);
  EXPECT_EQ(run_dattn("frobnicate").status, 2);
  EXPECT_EQ(run_dattn("backends --diffusion-attention-backend FLASH_ATTN").status, 2);
}

TEST(CliBackends, JsonListsEveryBackendWithItsSurfaceAndExtras) {
  CliResult r = run_dattn("backends --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[0]["name"], "FLASH_ATTN");
  EXPECT_EQ(j[1]["name"], "TORCH_SDPA");
  EXPECT_EQ(j[2]["name"], "SAGE_ATTN");
  EXPECT_EQ(j[3]["name"], "SPARSE_BLOCK");
  for (const auto& b : j) {
    EXPECT_TRUE(b["available"].get<bool>()) << b.dump();  // every backend runs on the CPU
    EXPECT_EQ(b["platform_default"].get<bool>(), b["name"] == "FLASH_ATTN");
  }
  EXPECT_EQ(j[2]["head_dims"], "64, 128");
  std::vector<std::string> keys;
  for (const auto& x : j[3]["extra"]) keys.push_back(x["key"]);
  EXPECT_EQ(keys, (std::vector<std::string>{"block_size", "density", "cdf_threshold", "keep_diagonal"}));
  EXPECT_EQ(j[3]["extra"][0]["default"], 128);
  for (int i : {0, 2}) {  // FLASH_ATTN and SAGE_ATTN: the kernel choice
    ASSERT_EQ(j[i]["extra"].size(), 1u) << j[i].dump();
    EXPECT_EQ(j[i]["extra"][0]["key"], "kernel");
    EXPECT_EQ(j[i]["extra"][0]["type"], "string");
    EXPECT_EQ(j[i]["extra"][0]["default"], "auto");
    EXPECT_EQ(j[i]["extra"][0]["range"], "auto, hopper or portable");
  }
  ASSERT_EQ(j[1]["extra"].size(), 1u) << j[1].dump();  // TORCH_SDPA: its own two CUDA kernels
  EXPECT_EQ(j[1]["extra"][0]["key"], "kernel");
  EXPECT_EQ(j[1]["extra"][0]["range"], "auto, gemm or rows");
}

TEST(CliBackends, CudaDeviceSaysWhyABackendIsUnavailable) {
  CliResult r = run_dattn("backends --device cuda --json");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const auto& b : nlohmann::json::parse(r.out))
    if (!b["available"].get<bool>()) {
      EXPECT_FALSE(b["reason"].get<std::string>().empty()) << b.dump();
    }
}

TEST(CliAttention, EveryBackendRunsAndIsCloseToTheReference) {
  CliResult r = run_dattn("attention --backend all --shape 2,70,90,4,64 --kv-heads 2 --key-padding 60 "
                          "--repeat 1 --json --diffusion-attention-config.per_role.self.backend SPARSE_BLOCK "
                          "--diffusion-attention-config.per_role.self.extra.density 1");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 4u);
  for (const auto& row : j) {
    ASSERT_EQ(row["status"], "ok") << row.dump();
    EXPECT_EQ(row["nonfinite"], 0);
    // bf16 outputs round at 2^-9 relative; SAGE_ATTN quantizes to INT8/FP8; SPARSE_BLOCK at density 1
    // is exact attention in fp32.
    const double limit = row["backend"] == "SAGE_ATTN" ? 0.08 : row["dtype"] == "bf16" ? 5e-3 : 1e-5;
    EXPECT_LT(row["rel_l2"].get<double>(), limit) << row.dump();
  }
}

// --causal: FLASH_ATTN and TORCH_SDPA run it (with key padding) against the causal reference; the
// others answer unsupported with the shared reason; Sq != Sk is refused.
TEST(CliAttention, CausalRunsOnTheBackendsThatClaimIt) {
  CliResult r = run_dattn("attention --backend all --shape 2,150,150,4,64 --kv-heads 2 --key-padding 120 --causal "
                          "--repeat 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 4u);
  for (const auto& row : j) {
    const bool claims = row["backend"] == "FLASH_ATTN" || row["backend"] == "TORCH_SDPA";
    if (!claims) {
      EXPECT_NE(row.dump().find("causal masks are supported only by FLASH_ATTN and TORCH_SDPA"), std::string::npos)
          << row.dump();
      continue;
    }
    ASSERT_EQ(row["status"], "ok") << row.dump();
    EXPECT_LT(row["rel_l2"].get<double>(), row["dtype"] == "bf16" ? 5e-3 : 1e-5) << row.dump();
  }
  expect_user_error(run_dattn("attention --shape 1,8,9,2,64 --causal"), "causal attention needs equal query and key");
}

TEST(CliAttention, WithoutBackendTheRoleIsResolvedThroughTheConfiguration) {
  CliResult r = run_dattn("attention --shape 1,32,32,2,64 --repeat 1 --json --role cross "
                          "--diffusion-attention-config.per_role.cross.backend TORCH_SDPA");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["backend"], "TORCH_SDPA");
}

TEST(CliAttention, TextTableHasOneRowPerBackend) {
  CliResult r = run_dattn("attention --backend FLASH_ATTN,TORCH_SDPA --shape 1,16,16,1,32 --repeat 1 --seed 7");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("seed 7"), std::string::npos);
  EXPECT_NE(r.out.find("FLASH_ATTN"), std::string::npos);
  EXPECT_NE(r.out.find("TORCH_SDPA"), std::string::npos);
  EXPECT_EQ(r.out.find("SAGE_ATTN"), std::string::npos);
  // Seed 0 is a seed, not "a fresh one" (it was replaced by a random seed).
  r = run_dattn("attention --backend FLASH_ATTN --shape 1,16,16,1,32 --repeat 1 --seed 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("seed 0,"), std::string::npos) << r.out;
}

TEST(CliAttention, BadInputIsAOneLineErrorWithStatusTwo) {
  expect_user_error(run_dattn("attention --shape 1,-5,8,2,64"), "seq_q = -5");
  expect_user_error(run_dattn("attention --shape 1,0,8,2,64"), "seq_q = 0");
  expect_user_error(run_dattn("attention --shape 1,8,8"), "expected 5 integers");
  expect_user_error(run_dattn("attention --shape 1,8,x,2,64"), "'x' is not an integer");
  expect_user_error(run_dattn("attention --shape 1,8,8,3,64 --kv-heads 2"), "heads_q = 3");
  // 0 ran as "same as H" instead of being refused.
  expect_user_error(run_dattn("attention --shape 1,8,8,2,64 --kv-heads 0"), "--kv-heads 0: expected a positive number");
  expect_user_error(run_dattn("attention --shape 1,8,8,2,64 --dtype fp99"), "--dtype 'fp99'");
  expect_user_error(run_dattn("attention --shape 1,8,8,2,64 --backend SAGE_ATTN --dtype fp32"),
                    "dtype fp32 not in {bf16, fp16}");
  expect_user_error(run_dattn("attention --shape 1,8,8,2,32 --backend SAGE_ATTN --dtype bf16"),
                    "head_dim 32 not in {64, 128}");
  expect_user_error(run_dattn("attention --shape 1,8,8,2,64 --backend NOPE"), "Unknown diffusion attention backend");
  expect_user_error(run_dattn("attention --shape 1,8,8,2,64 --key-padding 9"), "--key-padding 9");
  expect_user_error(run_dattn("attention --shape 1,8,8,2,64 --repeat 0"), "--repeat 0");
  expect_user_error(run_dattn("attention --shape 1,8,8,2,64 -dac " + shell_quote("{oops")), "JSON");
  expect_user_error(run_dattn("attention --shape 1,8,8,2,64 --kv-heads abc"), "abc");
  expect_user_error(run_dattn("attention"), "--shape");
}

}  // namespace
}  // namespace dattn::testing
