// `dattn resolve` end to end: the spec's examples, the user document's examples, and its errors.
#include <algorithm>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"

namespace dattn::testing {
namespace {

constexpr const char* kValidList = "Valid options are: FLASH_ATTN, TORCH_SDPA, SAGE_ATTN, SPARSE_BLOCK";

nlohmann::json resolve_json(const std::string& args, const std::string& env = "") {
  CliResult r = run_dattn("resolve --json " + args, env);
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

// A configuration error: status 2, nothing on stdout, one line on stderr containing `message`.
void expect_config_error(const CliResult& r, const std::string& message) {
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;
}

TEST(CliResolve, DefaultConfigurationUsesThePlatformDefaultForSelfAndCross) {
  CliResult r = run_dattn("resolve --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "[{\"role\":\"self\",\"role_category\":null,\"backend\":\"FLASH_ATTN\",\"extra\":{},"
            "\"source\":\"platform default\"},{\"role\":\"cross\",\"role_category\":null,\"backend\":"
            "\"FLASH_ATTN\",\"extra\":{},\"source\":\"platform default\"}]\n");
}

TEST(CliResolve, TextOutputIsOneLinePerRoleWithSourceLast) {
  CliResult r = run_dattn("resolve --role self --diffusion-attention-backend TORCH_SDPA");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "role=self role_category=None backend=TORCH_SDPA extra={} source=default\n");
}

TEST(CliResolve, UserDocDottedFlagsExample) {
  auto j = resolve_json(
      "--diffusion-attention-config.default.backend FLASH_ATTN "
      "--diffusion-attention-config.per_role.cross.backend TORCH_SDPA");
  EXPECT_EQ(j[0]["backend"], "FLASH_ATTN");
  EXPECT_EQ(j[0]["source"], "default");
  EXPECT_EQ(j[1]["backend"], "TORCH_SDPA");
  EXPECT_EQ(j[1]["source"], "per_role['cross']");
}

TEST(CliResolve, UserDocJsonExampleAndShortFlagAndEqualsForm) {
  const std::string blob = shell_quote(
      R"({"default":{"backend":"FLASH_ATTN"},"per_role":{"cross":{"backend":"TORCH_SDPA"}}})");
  for (const std::string& flag : {"--diffusion-attention-config " + blob, "-dac " + blob,
                                  "--diffusion-attention-config=" + blob}) {
    auto j = resolve_json(flag);
    EXPECT_EQ(j[0]["backend"], "FLASH_ATTN") << flag;
    EXPECT_EQ(j[1]["backend"], "TORCH_SDPA") << flag;
    EXPECT_EQ(j[1]["source"], "per_role['cross']") << flag;
  }
}

TEST(CliResolve, UserDocSparseBlockExtraIsDecodedAsJson) {
  auto j = resolve_json(
      "--diffusion-attention-config.per_role.self.backend SPARSE_BLOCK "
      "--diffusion-attention-config.per_role.self.extra.block_size 128");
  EXPECT_EQ(j[0]["backend"], "SPARSE_BLOCK");
  EXPECT_EQ(j[0]["extra"], nlohmann::json({{"block_size", 128}}));
  EXPECT_EQ(j[1]["source"], "platform default");
}

TEST(CliResolve, DottedFlagsGoOnTopOfTheJsonBlobWhateverTheirOrder) {
  auto j = resolve_json(
      "--diffusion-attention-config.per_role.self.extra.density 0.5 " +
      std::string("-dac ") + shell_quote(R"({"per_role":{"self":{"backend":"SPARSE_BLOCK","extra":{"density":0.1}}}})"));
  EXPECT_EQ(j[0]["backend"], "SPARSE_BLOCK");
  EXPECT_EQ(j[0]["extra"]["density"], 0.5);
}

TEST(CliResolve, ShorthandCombinesWithPerRoleOverrides) {
  auto j = resolve_json("--diffusion-attention-backend SAGE_ATTN --diffusion-attention-config.per_role.cross.backend sdpa");
  EXPECT_EQ(j[0]["backend"], "SAGE_ATTN");
  EXPECT_EQ(j[0]["source"], "default");
  EXPECT_EQ(j[1]["backend"], "TORCH_SDPA");  // alias and letter case are normalised
}

TEST(CliResolve, ShorthandWithExplicitDefaultIsMutuallyExclusive) {
  expect_config_error(run_dattn("resolve --diffusion-attention-backend SAGE_ATTN "
                                "--diffusion-attention-config.default.backend FLASH_ATTN"),
                      "--diffusion-attention-backend is mutually exclusive with "
                      "--diffusion-attention-config.default.backend.");
  expect_config_error(run_dattn("resolve --diffusion-attention-backend SAGE_ATTN -dac " +
                                shell_quote(R"({"default": "FLASH_ATTN"})")),
                      "mutually exclusive");
}

TEST(CliResolve, EnvironmentFillsTheDefaultOnlyWithoutAnExplicitOne) {
  auto j = resolve_json("", "DIFFUSION_ATTENTION_BACKEND=SAGE_ATTN");
  EXPECT_EQ(j[0]["backend"], "SAGE_ATTN");
  EXPECT_EQ(j[0]["source"], "env DIFFUSION_ATTENTION_BACKEND");
  j = resolve_json("--diffusion-attention-backend TORCH_SDPA", "DIFFUSION_ATTENTION_BACKEND=SAGE_ATTN");
  EXPECT_EQ(j[0]["backend"], "TORCH_SDPA");
  EXPECT_EQ(j[0]["source"], "default");
  j = resolve_json("", "DIFFUSION_ATTENTION_BACKEND=auto");
  EXPECT_EQ(j[0]["source"], "platform default");
  expect_config_error(run_dattn("resolve", "DIFFUSION_ATTENTION_BACKEND=FLASH"), "DIFFUSION_ATTENTION_BACKEND");
}

TEST(CliResolve, CategoryFallbackForKnownAndExplicitCategories) {
  auto j = resolve_json("--role ltx2.audio_to_video --role mine:cross --role other "
                        "--diffusion-attention-config.per_role.cross.backend TORCH_SDPA");
  EXPECT_EQ(j[0]["role_category"], "cross");
  EXPECT_EQ(j[0]["source"], "per_role['cross'] (role_category fallback)");
  EXPECT_EQ(j[1]["role"], "mine");
  EXPECT_EQ(j[1]["role_category"], "cross");
  EXPECT_EQ(j[1]["backend"], "TORCH_SDPA");
  EXPECT_TRUE(j[2]["role_category"].is_null());
  EXPECT_EQ(j[2]["source"], "platform default");
}

TEST(CliResolve, DottedRoleNamesAndNestedJsonRolesMeanTheSameRole) {
  auto dotted = resolve_json("--role ltx2.audio_to_video "
                             "--diffusion-attention-config.per_role.ltx2.audio_to_video.backend SAGE_ATTN");
  auto nested = resolve_json("--role ltx2.audio_to_video -dac " +
                             shell_quote(R"({"per_role":{"ltx2":{"audio_to_video":{"backend":"SAGE_ATTN"}}}})"));
  EXPECT_EQ(dotted, nested);
  EXPECT_EQ(dotted[0]["source"], "per_role['ltx2.audio_to_video']");
}

TEST(CliResolve, AutoMeansUnset) {
  auto j = resolve_json("--diffusion-attention-backend auto --diffusion-attention-config.per_role.self.backend AUTO");
  EXPECT_EQ(j[0]["source"], "platform default");
  EXPECT_EQ(j[1]["source"], "platform default");
}

TEST(CliResolve, ConfigurationErrorsExitTwoWithNothingOnStdout) {
  expect_config_error(run_dattn("resolve --diffusion-attention-backend FLASH"),
                      std::string("Unknown diffusion attention backend: 'FLASH'. ") + kValidList);
  expect_config_error(run_dattn("resolve -dac " + shell_quote("{\"default\": ")), "JSON");
  expect_config_error(run_dattn("resolve -dac " + shell_quote(R"({"default": 5})")), "backend");
  expect_config_error(run_dattn("resolve -dac " + shell_quote(R"({"defaults": "FLASH_ATTN"})")), "defaults");
  expect_config_error(run_dattn("resolve -dac " + shell_quote(R"({"per_role": {"self": {}}})")),
                      "Empty per_role entry for role 'self'");
  expect_config_error(
      run_dattn("resolve -dac " + shell_quote(R"({"per_role": {"self": {"backend": "FLASH_ATTN", "x": {"backend": "TORCH_SDPA"}}}})")),
      "Invalid per_role entry for role 'self': cannot mix backend/extra with nested role keys.");
  expect_config_error(run_dattn("resolve --diffusion-attention-config.per_role.self.backend SPARSE_BLOCK "
                                "--diffusion-attention-config.per_role.self.extra.block_size 100"),
                      "block_size");
  expect_config_error(run_dattn("resolve --diffusion-attention-config.per_role.self.backend FLASH_ATTN "
                                "--diffusion-attention-config.per_role.self.extra.block_size 64"),
                      "block_size");
  expect_config_error(run_dattn("resolve --diffusion-attention-config.per_role.self.backend"), "");
  expect_config_error(run_dattn("resolve --role :cross"), "--role");
  expect_config_error(run_dattn("resolve --device tpu"), "--device 'tpu'");
}

}  // namespace
}  // namespace dattn::testing
