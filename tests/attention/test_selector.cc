// Backend resolution by role and category (spec section 4): order, source strings, log line.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/config_error.h"
#include "dattn/attention/registry.h"
#include "dattn/attention/selector.h"
#include "dattn/core/error.h"

namespace dattn {
namespace {

using nlohmann::json;


AttentionShape cpu_shape(DType dtype = DType::F32, std::int64_t head_dim = 64) {
  AttentionShape s;
  s.seq_q = s.seq_k = 128;
  s.heads_q = s.heads_kv = 2;
  s.head_dim = head_dim;
  s.dtype = dtype;
  return s;
}

Resolution resolve(const AttentionSettings& s, const std::string& role, std::optional<std::string> category = {}) {
  return resolve_attention(s, role, category, cpu_shape(), Device::CPU);
}

// The log-once set lives for the process: a fresh role per run keeps the log tests valid under
// --gtest_repeat.
std::string fresh_role(const char* base) {
  static int n = 0;
  return std::string(base) + "." + std::to_string(++n);
}

AttentionSettings settings(const char* config_json, const char* env = nullptr) {
  return AttentionSettings{AttentionConfig::from_json_string(config_json), env_default_spec(env)};
}

TEST(Selector, FirstMatchWinsWithExactSources) {
  const auto s = settings(R"({"default":"SAGE_ATTN","per_role":{"self":"TORCH_SDPA","cross":"SPARSE_BLOCK"}})",
                          "FLASH_ATTN");
  auto r = resolve(s, "self", "cross");  // the role itself beats its category
  EXPECT_EQ(r.backend, "TORCH_SDPA");
  EXPECT_EQ(r.source, "per_role['self']");
  r = resolve(s, "ltx2.audio_to_video", "cross");
  EXPECT_EQ(r.backend, "SPARSE_BLOCK");
  EXPECT_EQ(r.source, "per_role['cross'] (role_category fallback)");
  r = resolve(s, "other", "joint");  // a category with no entry falls through
  EXPECT_EQ(r.backend, "SAGE_ATTN");
  EXPECT_EQ(r.source, "default");
  r = resolve(settings("{}", "sdpa"), "other");
  EXPECT_EQ(r.backend, "TORCH_SDPA");
  EXPECT_EQ(r.source, "env DIFFUSION_ATTENTION_BACKEND");
  r = resolve(settings("{}"), "other");
  EXPECT_EQ(r.backend, "FLASH_ATTN");  // on CPU the platform default is FLASH_ATTN
  EXPECT_EQ(r.source, "platform default");
  EXPECT_FALSE(r.is_explicit());
  EXPECT_TRUE(resolve(settings("{}", "SAGE_ATTN"), "other").is_explicit());
}

TEST(Selector, ExplicitDefaultBeatsTheEnvironmentSilently) {
  const auto r = resolve(settings(R"({"default":"TORCH_SDPA"})", "SAGE_ATTN"), "self");
  EXPECT_EQ(r.backend, "TORCH_SDPA");
  EXPECT_EQ(r.source, "default");
}

TEST(Selector, DocumentEnvironmentExample) {
  // DIFFUSION_ATTENTION_BACKEND=SAGE_ATTN with no flags: every role gets SAGE_ATTN from the environment.
  const auto s = settings("{}", "SAGE_ATTN");
  for (const char* role : {"self", "cross"}) {
    const auto r = resolve(s, role);
    EXPECT_EQ(r.backend, "SAGE_ATTN");
    EXPECT_EQ(r.source, "env DIFFUSION_ATTENTION_BACKEND");
  }
}

TEST(Selector, DocumentMixedBackendsExample) {
  AttentionFlags flags;
  flags.dotted = {{"per_role.self.backend", "FLASH_ATTN"}, {"per_role.cross.backend", "TORCH_SDPA"}};
  const AttentionSettings s{config_from_flags(flags), std::nullopt};
  EXPECT_EQ(resolve(s, "self").backend, "FLASH_ATTN");
  EXPECT_EQ(resolve(s, "self").source, "per_role['self']");
  EXPECT_EQ(resolve(s, "cross").backend, "TORCH_SDPA");
  EXPECT_EQ(resolve(s, "cross").source, "per_role['cross']");
}

TEST(Selector, ModelRoleFallsBackToItsCategory) {
  // The category a model declares for the role (dattn/models/attention_roles.h: "cross" for LTX-2's).
  const auto s = settings(R"({"per_role":{"cross":"TORCH_SDPA"}})");
  const auto r = resolve(s, "ltx2.audio_to_video", "cross");
  EXPECT_EQ(r.source, "per_role['cross'] (role_category fallback)");
}

TEST(Selector, CategoryIsNeverGuessedFromTheRole) {
  const auto r = resolve(settings(R"({"per_role":{"cross":"TORCH_SDPA"}})"), "ltx2.audio_to_video");
  EXPECT_EQ(r.source, "platform default");
}

TEST(Selector, ResolutionCarriesTheConfiguredExtra) {
  const auto s = settings(R"({"per_role":{"self":{"backend":"SPARSE_BLOCK","extra":{"block_size":64}}}})");
  const auto r = resolve(s, "self", std::nullopt);
  EXPECT_EQ(r.extra, (json{{"block_size", 64}}));  // as configured: no defaults filled in here
  EXPECT_EQ(r.role, "self");
  EXPECT_EQ(r.category, std::nullopt);
  EXPECT_EQ(resolve(settings("{}"), "self").extra, json::object());
}

TEST(Selector, HandBuiltSettingsAreCanonicalised) {
  AttentionSettings s;
  s.config.per_role["self"] = AttentionSpec{"sdpa"};
  EXPECT_EQ(resolve(s, "self").backend, "TORCH_SDPA");
  s.config.per_role["self"] = AttentionSpec{"nope"};
  EXPECT_EQ(config_error([&] { resolve(s, "self"); }),
            "Unknown diffusion attention backend: 'nope'. Valid options are: FLASH_ATTN, TORCH_SDPA, SAGE_ATTN, "
            "SPARSE_BLOCK");
}

TEST(Selector, NoPlatformDefaultIsAnErrorWithEachReason) {
  // int8 is no attention input dtype: neither candidate can run it.
  const AttentionShape shape = cpu_shape(DType::I8);
  ASSERT_EQ(platform_default_backend(shape, Device::CPU), nullptr);
  const std::string expected =
      "No platform default diffusion attention backend can run role 'cross' (role_category=None) on cpu for " +
      shape.describe() + " (FLASH_ATTN: " + find_backend("FLASH_ATTN")->supports(shape, Device::CPU).reason +
      "; TORCH_SDPA: " + find_backend("TORCH_SDPA")->supports(shape, Device::CPU).reason +
      "). Configure a backend that supports it explicitly.";
  EXPECT_EQ(config_error([&] { resolve_attention(settings("{}"), "cross", std::nullopt, shape, Device::CPU); }),
            expected);
  // An explicit choice does not consult the platform: the layer reports its own error.
  EXPECT_EQ(resolve_attention(settings(R"({"default":"SAGE_ATTN"})"), "cross", {}, shape, Device::CPU).backend,
            "SAGE_ATTN");
}

TEST(Selector, LogLine) {
  Resolution r{"ltx2.audio_to_video", "cross", "SAGE_ATTN", json::object(), "per_role['cross'] (role_category fallback)"};
  EXPECT_EQ(resolution_log_line(r),
            "Resolved diffusion attention backend 'SAGE_ATTN' for role='ltx2.audio_to_video' "
            "(role_category='cross') via per_role['cross'] (role_category fallback)");
  r = Resolution{"self", std::nullopt, "FLASH_ATTN", json::object(), "platform default"};
  EXPECT_EQ(resolution_log_line(r),
            "Resolved diffusion attention backend 'FLASH_ATTN' for role='self' (role_category=None) via platform default");
}

TEST(Selector, LogsOncePerRoleBackendAndSource) {
  const Resolution r{fresh_role("selector-test.once"), std::nullopt, "FLASH_ATTN", json::object(), "default"};
  testing::internal::CaptureStderr();
  const bool first = log_resolution_once(r);
  const bool again = log_resolution_once(r);
  Resolution other_source = r;
  other_source.source = "platform default";
  const bool other = log_resolution_once(other_source);
  Resolution other_backend = r;
  other_backend.backend = "TORCH_SDPA";
  const bool other_b = log_resolution_once(other_backend);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(first);
  EXPECT_FALSE(again);
  EXPECT_TRUE(other);
  EXPECT_TRUE(other_b);
  EXPECT_EQ(err, "[dattn] INFO " + resolution_log_line(r) + "\n[dattn] INFO " + resolution_log_line(other_source) +
                     "\n[dattn] INFO " + resolution_log_line(other_backend) + "\n");
}

TEST(Selector, LogOnceIsThreadSafe) {
  const Resolution r{fresh_role("selector-test.threads"), std::nullopt, "FLASH_ATTN", json::object(), "default"};
  std::atomic<int> logged{0};
  testing::internal::CaptureStderr();
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&] {
      for (int j = 0; j < 100; ++j) logged += log_resolution_once(r) ? 1 : 0;
    });
  for (auto& t : threads) t.join();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(logged.load(), 1);
  EXPECT_EQ(err, "[dattn] INFO " + resolution_log_line(r) + "\n");
}

}  // namespace
}  // namespace dattn
