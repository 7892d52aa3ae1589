// The HunyuanVideo-1.5 VAE decoder on CUDA: the golden case (diffusers' float64 whole-video decode; the
// output and every intermediate) and the CPU decoder on random weights of a small form (widths 6 and 12:
// the kernels' scalar paths; batch 2, non-square frames), in both convolution maths, the score-blocked
// attention, and the memory model against the measured peak at full size. Every activation, cache and
// the video the CUDA decoder allocates is NaN-filled first (a run context with set_poison_new_memory), so
// an element a kernel fails to write reaches the output as NaN and fails the NaN check, which comes
// before any error figure. Skipped without a CUDA device.
//
// Tolerances, as the Wan VAE's CUDA tests (test_wan_vae_cuda.cc): FP32 convolutions differ from the CPU
// only in summation order (limit 2e-5, against diffusers' float64 as against the CPU); TF32 rounds every
// convolution's operands to 10 mantissa bits, about 1e-3 relative L2 on a video (limit 1e-2, still far
// below the 1e-1 and more an indexing or cache error gives). bf16 activations: the Wan VAE's reasoning
// (every stored activation, cache frame and convolution weight rounded to bf16, 1.1e-3 rms each, adding
// as a random walk over the ~40 stored tensors of a decode): limit 2e-2 relative L2 and 0.1 max abs on
// the video. Measured on the H200 (2026-12-01): the golden decode 1.48e-2 rel L2 (0.092 max abs) against
// diffusers, 1.47e-2 against the fp32 decode, the released architecture 1.24e-2 (0.036), random weights
// against the CPU 1.05e-2 (0.046): the max abs of the golden case is the closest to its limit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "dattn/io/safetensors.h"
#include "dattn/models/hunyuanvideo15_vae.h"
#include "dattn/models/random_checkpoint.h"
#include "models/hv15_vae_test_util.h"
#include "models/vae_test_inputs.h"
#include "support/device_case.h"

namespace fs = std::filesystem;

namespace dattn {
namespace {

using Math = HunyuanVideo15VaeConvMath;
using testing::error_of;

double limit_for(Math m) { return m == Math::TF32 ? 1e-2 : 2e-5; }
constexpr double kBf16Limit = 2e-2, kBf16MaxAbs = 0.1;
const char* name_of(Math m) { return m == Math::TF32 ? "tf32" : "fp32"; }

class Hv15VaeCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
    context_ = RunContext::create(Device::CUDA, 0);
    context_->set_poison_new_memory(true);
    scope_ = std::make_unique<ContextScope>(*context_);
  }
  void TearDown() override {
    scope_.reset();
    context_.reset();
  }

  std::shared_ptr<RunContext> context_;

 private:
  std::unique_ptr<ContextScope> scope_;
};

Tensor decode_on_cuda(const HunyuanVideo15Vae& vae, const Tensor& z) {
  const Tensor video = vae.decode(z);
  EXPECT_EQ(video.device(), Device::CUDA);
  EXPECT_EQ(video.shape(), vae.config().video_shape(z.shape()));
  return video.to(Device::CPU);
}

void check_golden(Math math) {
  const SafetensorsFile golden(testing::hv15_vae_case());
  const Tensor z = Tensor::from_f64(golden.read_f64("input.z"), golden.info("input.z").shape, DType::F32);
  const HunyuanVideo15Vae vae = HunyuanVideo15Vae::load(testing::hv15_vae_dir(), Device::CUDA, DType::F32, math);
  const testing::Error e = error_of(decode_on_cuda(vae, z).to_f64_vector(), golden.read_f64("output.video"));
  std::printf("[hv15_vae cuda %s] golden output.video: rel L2 %.3g, max abs %.3g\n", name_of(math), e.rel_l2,
              e.max_abs);
  ASSERT_EQ(e.nonfinite, 0u) << "NaN/Inf in the decoded video (an unwritten or poisoned element)";
  EXPECT_LE(e.rel_l2, limit_for(math));

  // The intermediates, through the internal decoder on CUDA.
  std::vector<double> video;
  const auto rec = testing::decode_recording(testing::hv15_vae_dir(), z, Device::CUDA,
                                             math == Math::TF32 ? ops::ConvMath::TF32 : ops::ConvMath::FP32, &video);
  for (const char* name : {"decoder.mid_block.in", "decoder.mid_block.attentions.0.in",
                           "decoder.mid_block.attentions.0.out", "decoder.mid_block.out", "decoder.up_blocks.0.out"}) {
    ASSERT_TRUE(rec.count(name)) << name;
    const testing::Error ie = error_of(rec.at(name).ncthw(), golden.read_f64(name));
    std::printf("[hv15_vae cuda %s] %-36s rel L2 %.3g\n", name_of(math), name, ie.rel_l2);
    ASSERT_EQ(ie.nonfinite, 0u) << name;
    EXPECT_LE(ie.rel_l2, limit_for(math)) << name;
  }
}

TEST_F(Hv15VaeCuda, GoldenDecodeMatchesDiffusersFp32) { check_golden(Math::FP32); }
TEST_F(Hv15VaeCuda, GoldenDecodeMatchesDiffusersTf32) { check_golden(Math::TF32); }

// bf16 activations against diffusers' float64 decode of the golden case: the video and every intermediate.
TEST_F(Hv15VaeCuda, GoldenDecodeMatchesDiffusersBf16) {
  const SafetensorsFile golden(testing::hv15_vae_case());
  const Tensor z = Tensor::from_f64(golden.read_f64("input.z"), golden.info("input.z").shape, DType::F32);
  const HunyuanVideo15Vae vae = HunyuanVideo15Vae::load(testing::hv15_vae_dir(), Device::CUDA, DType::BF16);
  EXPECT_EQ(vae.dtype(), DType::BF16);
  const Tensor video = decode_on_cuda(vae, z);
  ASSERT_EQ(video.dtype(), DType::F32) << "the video stays float32";
  const testing::Error e = error_of(video.to_f64_vector(), golden.read_f64("output.video"));
  std::printf("[hv15_vae cuda bf16] golden output.video: rel L2 %.3g, max abs %.3g\n", e.rel_l2, e.max_abs);
  ASSERT_EQ(e.nonfinite, 0u) << "NaN/Inf in the decoded video (an unwritten or poisoned element)";
  EXPECT_LE(e.rel_l2, kBf16Limit);
  EXPECT_LE(e.max_abs, kBf16MaxAbs);

  std::vector<double> thwc;
  const auto rec =
      testing::decode_recording(testing::hv15_vae_dir(), z, Device::CUDA, ops::ConvMath::TF32, &thwc, DType::BF16);
  for (const char* name : {"decoder.mid_block.in", "decoder.mid_block.attentions.0.in",
                           "decoder.mid_block.attentions.0.out", "decoder.mid_block.out", "decoder.up_blocks.0.out"}) {
    ASSERT_TRUE(rec.count(name)) << name;
    const testing::Error ie = error_of(rec.at(name).ncthw(), golden.read_f64(name));
    std::printf("[hv15_vae cuda bf16] %-36s rel L2 %.3g\n", name, ie.rel_l2);
    ASSERT_EQ(ie.nonfinite, 0u) << name;
    EXPECT_LE(ie.rel_l2, kBf16Limit) << name;
  }
}

// bf16 against the fp32 CUDA decode (FP32 math) of the same random latents.
void check_bf16_against_fp32(const std::string& dir, const Tensor& z, const std::string& tag) {
  const std::vector<double> ref =
      decode_on_cuda(HunyuanVideo15Vae::load(dir, Device::CUDA, DType::F32, Math::FP32), z).to_f64_vector();
  const testing::Error e =
      error_of(decode_on_cuda(HunyuanVideo15Vae::load(dir, Device::CUDA, DType::BF16), z).to_f64_vector(), ref);
  std::printf("[hv15_vae cuda bf16] %s %s vs fp32: rel L2 %.3g, max abs %.3g\n", tag.c_str(),
              shape_str(z.shape()).c_str(), e.rel_l2, e.max_abs);
  ASSERT_EQ(e.nonfinite, 0u) << tag << ": NaN/Inf in the bf16 decode";
  EXPECT_LE(e.rel_l2, kBf16Limit) << tag;
  EXPECT_LE(e.max_abs, kBf16MaxAbs) << tag;
}

// The golden VAE at a larger size, and the released VAE's architecture (random weights, its real widths
// 1024..128: the bf16 cuDNN path everywhere but conv_out) at 256x384 x 5 frames.
TEST_F(Hv15VaeCuda, Bf16MatchesFp32OnRandomLatents) {
  check_bf16_against_fp32(testing::hv15_vae_dir(), testing::random_latents({1, 8, 4, 6, 10}, 61), "golden vae");
  const fs::path root = fs::temp_directory_path() / ("dattn_hv15_vae_bf16_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  RandomCheckpointOptions o;
  o.seed = 62;
  write_random_checkpoint(testing::golden_dir() + "/../../configs/hunyuanvideo1.5-480p-t2v/vae.json",
                          (root / "vae").string(), o);
  check_bf16_against_fp32((root / "vae").string(), testing::random_latents({1, 32, 2, 16, 24}, 63),
                          "released architecture");
  fs::remove_all(root);
}

// Random weights (make-checkpoint's writer) decoded on the CPU and on CUDA in both maths.
TEST_F(Hv15VaeCuda, RandomWeightsMatchCpu) {
  const fs::path root = fs::temp_directory_path() / ("dattn_hv15_vae_cuda_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  const nlohmann::json j = {{"_class_name", "AutoencoderKLHunyuanVideo15"},
                            {"latent_channels", 4},
                            {"block_out_channels", {6, 12, 16, 16}},
                            {"spatial_compression_ratio", 8}};
  std::ofstream(root / "vae.json") << j.dump();
  RandomCheckpointOptions o;
  o.seed = 21;
  write_random_checkpoint((root / "vae.json").string(), (root / "vae").string(), o);
  const Tensor z = testing::random_latents({2, 4, 3, 3, 5}, 22);
  const std::vector<double> cpu = HunyuanVideo15Vae::load((root / "vae").string()).decode(z).to_f64_vector();
  for (Math math : {Math::FP32, Math::TF32}) {
    const HunyuanVideo15Vae vae = HunyuanVideo15Vae::load((root / "vae").string(), Device::CUDA, DType::F32, math);
    const testing::Error e = error_of(decode_on_cuda(vae, z).to_f64_vector(), cpu);
    std::printf("[hv15_vae cuda %s] random weights [2,4,3,3,5] vs CPU: rel L2 %.3g, max abs %.3g\n", name_of(math),
                e.rel_l2, e.max_abs);
    ASSERT_EQ(e.nonfinite, 0u) << name_of(math);
    EXPECT_LE(e.rel_l2, limit_for(math)) << name_of(math);
  }
  // bf16 activations with widths 6 and 12 and 4 latent channels: float32 convolutions amid bf16 frame ops.
  {
    const HunyuanVideo15Vae vae = HunyuanVideo15Vae::load((root / "vae").string(), Device::CUDA, DType::BF16);
    const testing::Error e = error_of(decode_on_cuda(vae, z).to_f64_vector(), cpu);
    std::printf("[hv15_vae cuda bf16] random weights [2,4,3,3,5] vs CPU: rel L2 %.3g, max abs %.3g\n", e.rel_l2,
                e.max_abs);
    ASSERT_EQ(e.nonfinite, 0u) << "bf16";
    EXPECT_LE(e.rel_l2, kBf16Limit) << "bf16";
    EXPECT_LE(e.max_abs, kBf16MaxAbs) << "bf16";
  }
  fs::remove_all(root);
}

// Queries in blocks of 5 rows (12 pixels per latent frame: several blocks and a ragged last one) give
// the one-block result up to the GEMMs' summation order.
TEST_F(Hv15VaeCuda, ScoreBlockedAttentionMatchesOneBlock) {
  const Tensor z = testing::random_latents({1, 8, 3, 3, 4}, 3);
  HunyuanVideo15Vae vae = HunyuanVideo15Vae::load(testing::hv15_vae_dir(), Device::CUDA, DType::F32, Math::FP32);
  const std::vector<double> one = decode_on_cuda(vae, z).to_f64_vector();
  vae.set_attention_score_bytes(5 * 36 * 4);  // at most 36 keys (3 frames x 12 pixels): >= 5 rows per block
  const testing::Error e = error_of(decode_on_cuda(vae, z).to_f64_vector(), one);
  ASSERT_EQ(e.nonfinite, 0u);
  EXPECT_LE(e.rel_l2, 1e-6);
}

// The memory model (hunyuanvideo15_vae_decode_memory) against the context's measured device peak, for the
// released VAE's architecture with random weights at 480x832 (9 frames: the frame count adds only the
// video and the attention cache, which the model counts exactly). cuDNN's workspaces (up to 512 MiB per
// convolution, ops/cuda/conv3d.h) and the pool's rounding are not in the model: 1 GiB of slack.
TEST_F(Hv15VaeCuda, FullSize480pPeakMemoryWithinModel) {
  const fs::path root = fs::temp_directory_path() / ("dattn_hv15_vae_full_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  RandomCheckpointOptions o;
  o.seed = 3;
  write_random_checkpoint(testing::golden_dir() + "/../../configs/hunyuanvideo1.5-480p-t2v/vae.json",
                          (root / "vae").string(), o);
  const Shape latent = {1, 32, 3, 30, 52};
  context_->reset_peak();
  const std::size_t before = context_->bytes_in_use();
  const HunyuanVideo15Vae vae = HunyuanVideo15Vae::load((root / "vae").string(), Device::CUDA, DType::F32, Math::TF32);
  const Tensor video = vae.decode(testing::random_latents(latent, 4));
  const double peak = double(context_->bytes_peak() - before), gib = 1024.0 * 1024 * 1024;
  const HunyuanVideo15VaeMemory m = hunyuanvideo15_vae_decode_memory(vae.config(), latent);
  std::printf(
      "[hv15_vae cuda] 480x832x9 decode: measured peak %.2f GiB, model %.2f GiB (weights %.2f, video %.2f, "
      "caches %.2f, attention %.2f, working %.2f)\n",
      peak / gib, m.total() / gib, m.weights / gib, m.video / gib, m.frame_caches / gib, m.attention_cache / gib,
      m.working / gib);
  std::size_t nonfinite = 0;
  for (double v : video.to(Device::CPU).to_f64_vector()) nonfinite += !std::isfinite(v);
  EXPECT_EQ(nonfinite, 0u);
  EXPECT_GE(peak, double(m.weights + m.video));
  EXPECT_LE(peak, double(m.total()) + gib);
  fs::remove_all(root);
}

// Runs everywhere: the dtype is checked before any device work (bf16 is a CUDA dtype; fp16 none).
TEST(Hv15VaeCudaLoad, UnsupportedDtypesAreClearErrors) {
  EXPECT_THROW(HunyuanVideo15Vae::load(testing::hv15_vae_dir(), Device::CUDA, DType::F16), UserError);
  EXPECT_THROW(HunyuanVideo15Vae::load(testing::hv15_vae_dir(), Device::CPU, DType::BF16), UserError);
}

}  // namespace
}  // namespace dattn
