// AttentionLayer: resolves at build time, refuses an explicit backend that cannot run its problem,
// logs once, and runs the resolved backend with its extra defaults filled in.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/config_error.h"
#include "dattn/attention/layer.h"
#include "dattn/attention/reference.h"
#include "dattn/core/error.h"
#include "support/attention_cases.h"

namespace dattn {
namespace {

using nlohmann::json;


AttentionShape shape_of(DType dtype, std::int64_t head_dim, std::int64_t seq = 64) {
  AttentionShape s;
  s.seq_q = s.seq_k = seq;
  s.heads_q = s.heads_kv = 2;
  s.head_dim = head_dim;
  s.dtype = dtype;
  return s;
}

AttentionSettings settings(const char* config_json) {
  return AttentionSettings{AttentionConfig::from_json_string(config_json), std::nullopt};
}

TEST(Layer, ExplicitBackendThatCannotRunIsABuildError) {
  // The spec's example: SAGE_ATTN by default, a cross-attention layer with head_dim 256.
  const auto s = settings(R"({"default":"SAGE_ATTN"})");
  EXPECT_EQ(config_error([&] {
              AttentionLayer("blocks.3.attn2", "cross", std::nullopt, s, shape_of(DType::BF16, 256), Device::CPU);
            }),
            "SAGE_ATTN cannot run role 'cross' (blocks.3.attn2): head_dim 256 not in {64, 128}. "
            "Backends that can: FLASH_ATTN, TORCH_SDPA");
}

// A CUDA-only kernel named on the CPU failed at the first forward, after the weights were read.
TEST(Layer, ACudaOnlyKernelOnTheCpuIsABuildError) {
  EXPECT_EQ(config_error([] {
              AttentionLayer("blocks.0.attn1", "self", std::nullopt,
                             settings(R"({"default":{"backend":"FLASH_ATTN","extra":{"kernel":"hopper"}}})"),
                             shape_of(DType::F32, 64), Device::CPU);
            }),
            "FLASH_ATTN cannot run role 'self' (blocks.0.attn1): extra kernel 'hopper' names a CUDA kernel; on cpu "
            "use auto or portable");
  EXPECT_EQ(config_error([] {
              AttentionLayer("blocks.0.attn2", "cross", std::nullopt,
                             settings(R"({"per_role":{"cross":{"backend":"TORCH_SDPA","extra":{"kernel":"rows"}}}})"),
                             shape_of(DType::F32, 64), Device::CPU);
            }),
            "TORCH_SDPA cannot run role 'cross' (blocks.0.attn2): extra kernel 'rows' names a CUDA kernel; on cpu use "
            "auto");
  // What the CPU runs is still taken.
  AttentionLayer("blocks.0.attn1", "self", std::nullopt,
                 settings(R"({"default":{"backend":"FLASH_ATTN","extra":{"kernel":"portable"}}})"),
                 shape_of(DType::F32, 64), Device::CPU);
}

TEST(Layer, EverySourceButThePlatformIsChecked) {
  const AttentionShape d256 = shape_of(DType::BF16, 256);
  const std::string tail = ": head_dim 256 not in {64, 128}. Backends that can: FLASH_ATTN, TORCH_SDPA";
  // Through the category fallback the message names the layer's own role.
  EXPECT_EQ(config_error([&] {
              AttentionLayer("blocks.0.audio_to_video", "ltx2.audio_to_video", "cross",
                             settings(R"({"per_role":{"cross":"SAGE_ATTN"}})"), d256, Device::CPU);
            }),
            "SAGE_ATTN cannot run role 'ltx2.audio_to_video' (blocks.0.audio_to_video)" + tail);
  const AttentionSettings env{AttentionConfig{}, env_default_spec("SAGE_ATTN")};
  EXPECT_EQ(config_error([&] { AttentionLayer("blocks.1.attn1", "self", std::nullopt, env, d256, Device::CPU); }),
            "SAGE_ATTN cannot run role 'self' (blocks.1.attn1)" + tail);
}

TEST(Layer, NoCapableBackendSaysNone) {
  EXPECT_EQ(config_error([&] {
              AttentionLayer("blocks.0.attn1", "self", std::nullopt, settings(R"({"per_role":{"self":"SAGE_ATTN"}})"),
                             shape_of(DType::I8, 64), Device::CPU);
            }),
            "SAGE_ATTN cannot run role 'self' (blocks.0.attn1): dtype int8 not in {bf16, fp16}. Backends that can: none");
}

TEST(Layer, PlatformDefaultIsChosenForTheShape) {
  const AttentionLayer layer("blocks.0.attn1", "self", std::nullopt, settings("{}"), shape_of(DType::BF16, 256),
                             Device::CPU);
  EXPECT_EQ(layer.resolution().source, "platform default");
  EXPECT_EQ(layer.backend().name(), "FLASH_ATTN");
  EXPECT_EQ(layer.extra(), (json{{"kernel", "auto"}}));  // FLASH_ATTN's one declared default
}

TEST(Layer, StoresExtraWithDefaults) {
  const AttentionLayer layer("blocks.0.attn1", "self", std::nullopt,
                             settings(R"({"per_role":{"self":{"backend":"sparse_block","extra":{"density":0.5}}}})"),
                             shape_of(DType::F32, 64), Device::CPU);
  EXPECT_EQ(layer.backend().name(), "SPARSE_BLOCK");
  EXPECT_EQ(layer.resolution().extra, (json{{"density", 0.5}}));  // the resolution keeps what was configured
  // The layer adds the declared defaults (block_size, keep_diagonal); keys without one stay absent.
  EXPECT_EQ(layer.extra(), (json{{"density", 0.5}, {"block_size", 128}, {"keep_diagonal", true}}));
}

TEST(Layer, LogsItsResolutionOnce) {
  // The log-once set lives for the process: a fresh role per run keeps this valid under --gtest_repeat.
  static int run = 0;
  const std::string role = "layer-test.role" + std::to_string(++run);
  const AttentionSettings s{AttentionConfig::from_json(json{{"per_role", {{role, "TORCH_SDPA"}}}}), std::nullopt};
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i)
    AttentionLayer("blocks." + std::to_string(i) + ".attn1", role, std::nullopt, s, shape_of(DType::F32, 64),
                   Device::CPU);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "[dattn] INFO Resolved diffusion attention backend 'TORCH_SDPA' for role='" + role +
                "' (role_category=None) via per_role['" + role + "']\n");
}

TEST(Layer, ForwardRunsTheResolvedBackend) {
  const AttentionShape shape = shape_of(DType::F32, 64, 80);
  for (const char* config : {"{}", R"({"default":"TORCH_SDPA"})",
                             R"({"default":{"backend":"SPARSE_BLOCK","extra":{"block_size":64,"density":1}}})"}) {
    const AttentionLayer layer("blocks.0.attn1", "self", std::nullopt, settings(config), shape, Device::CPU);
    test::AttentionCase c = test::make_random_case(shape, test::MaskMode::Lengths, test::fresh_seed());
    layer.forward(c.problem());
    std::vector<double> ref;
    attention_reference_f64(c.problem(), ref);
    EXPECT_EQ(test::check_output(c, ref, {1e-5, 0.99999}), "") << config << " seed " << c.seed;
  }
}

TEST(Layer, ForwardRefusesAProblemTheBackendCannotRun) {
  const AttentionLayer layer("blocks.0.attn1", "self", std::nullopt, settings(R"({"default":"SAGE_ATTN"})"),
                             shape_of(DType::BF16, 64), Device::CPU);
  test::AttentionCase c = test::make_random_case(shape_of(DType::BF16, 256), test::MaskMode::None, 1);
  EXPECT_THROW(layer.forward(c.problem()), UserError);
}

}  // namespace
}  // namespace dattn
