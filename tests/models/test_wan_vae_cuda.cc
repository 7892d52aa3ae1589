// The Wan VAE decoder on CUDA: the golden case (diffusers' float64 decode) and the CPU decoder on random
// weights of both forms (Wan2.1: plain up blocks; Wan2.2: residual up blocks, patch 2), with several
// latent frames (the causal frame cache), batch 2 and non-square sizes, in both convolution maths. Every
// activation, cache frame and the video the CUDA decoder allocates is NaN-filled first (a run context
// with set_poison_new_memory), so an element a kernel fails to write reaches the output as NaN and fails
// the NaN check, which comes before any error figure. Skipped without a CUDA device.
//
// Tolerances. FP32 (exact float32 convolutions, fp32 GEMMs in the attention): only the summation order
// differs from the CPU, the relative L2 stays at float32 rounding (the CPU itself is within ~1e-6 of
// diffusers' float64 on the golden case): limit 2e-5. TF32: every convolution rounds both operands to
// 10 mantissa bits (relative error up to 2^-11 = 4.9e-4 each, random in sign), accumulating in float32;
// over the ~30 convolutions between latent and video, with norms in between that keep activations at
// unit scale, this leaves about 1e-3 relative L2 on the video (measured on an H200: golden 9.3e-4,
// Wan2.2 form 9.7e-4, Wan2.1 form 2.0e-3; FP32 gave 1.2e-6 to 1.8e-6), which the limit 1e-2 bounds with
// margin while still catching any indexing or cache error (those give errors of order 1e-1 and more).
//
// bf16 activations (DType::BF16 at load): every activation and cache frame is stored in bf16 (a rounding
// of at most 2^-9 relative, about 1.1e-3 rms, per stored tensor), the convolution weights too, with float32
// accumulation, norms and attention. Between latent and video the tiny decoders store some 30 to 40
// rounded tensors; the norms keep the activations at unit scale, so the roundings add as a random walk,
// sqrt(40) x 1.1e-3 = 7e-3 relative L2, up to twice that where the residual sums cancel: limit 2e-2
// relative L2 and 0.1 max abs on a video of magnitude ~1 (an indexing or cache error still gives 1e-1 and
// more). Measured on the H200 (2026-12-01): golden decode 1.21e-2 rel L2 (0.022 max abs) against
// diffusers, 1.19e-2 to 1.43e-2 (0.028 to 0.047) against the fp32 decode on the random forms.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>

#include "dattn/core/device.h"
#include "dattn/core/error.h"
#include "dattn/io/safetensors.h"
#include "dattn/models/wan_vae.h"
#include "dattn/core/run_context.h"
#include "support/device_case.h"
#include "models/vae_test_inputs.h"
#include "support/golden_dir.h"

namespace fs = std::filesystem;

namespace dattn {
namespace {

constexpr double kFp32Limit = 2e-5;
constexpr double kTf32Limit = 1e-2;
constexpr double kBf16Limit = 2e-2, kBf16MaxAbs = 0.1;

using dattn::testing::golden_vae;
using dattn::testing::random_latents;

struct Errors {
  std::size_t nonfinite = 0;
  double rel_l2 = 0, max_abs = 0;
};

Errors compare(const Tensor& got, const std::vector<double>& expected) {
  const std::vector<double> g = got.to_f64_vector();
  Errors e;
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (!std::isfinite(g[i])) {
      ++e.nonfinite;
      continue;
    }
    err2 += (g[i] - expected[i]) * (g[i] - expected[i]);
    ref2 += expected[i] * expected[i];
    e.max_abs = std::max(e.max_abs, std::abs(g[i] - expected[i]));
  }
  e.rel_l2 = std::sqrt(err2 / ref2);
  return e;
}

const char* math_name(WanVaeConvMath m) { return m == WanVaeConvMath::TF32 ? "tf32" : "fp32"; }
double limit_for(WanVaeConvMath m) { return m == WanVaeConvMath::TF32 ? kTf32Limit : kFp32Limit; }

// Runs the test in a CUDA run context of its own whose every allocation is NaN-filled; skips without a GPU.
class WanVaeCuda : public ::testing::Test {
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

 private:
  std::shared_ptr<RunContext> context_;
  std::unique_ptr<ContextScope> scope_;
};

class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(fs::temp_directory_path() / ("dattn_wan_vae_cuda_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

// Decodes `z` on CUDA (checking the result is a CUDA tensor of the video shape) and returns it on the host.
Tensor decode_on_cuda(const WanVae& vae, const Tensor& z, double* seconds = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  const Tensor video = vae.decode(z);
  if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(video.device(), Device::CUDA);
  EXPECT_EQ(video.shape(), vae.config().video_shape(z.shape()));
  return video.to(Device::CPU);
}

void check_golden(WanVaeConvMath math) {
  SafetensorsFile golden(testing::golden_dir() + "/wan_tiny/cases/vae_decode_z8.safetensors");
  const Tensor z = Tensor::from_f64(golden.read_f64("input.z"), golden.info("input.z").shape, DType::F32);
  const WanVae vae = WanVae::load(golden_vae(), Device::CUDA, DType::F32, math);
  double seconds = 0;
  const Tensor video = decode_on_cuda(vae, z, &seconds);
  ASSERT_EQ(video.shape(), golden.info("output.video").shape);
  const Errors e = compare(video, golden.read_f64("output.video"));
  std::printf("[wan_vae cuda %s] golden decode %s -> %s: %.3f s, rel L2 %.3g, max abs %.3g\n", math_name(math),
              shape_str(z.shape()).c_str(), shape_str(video.shape()).c_str(), seconds, e.rel_l2, e.max_abs);
  ASSERT_EQ(e.nonfinite, 0u) << "NaN/Inf in the decoded video (an unwritten or poisoned element)";
  EXPECT_LE(e.rel_l2, limit_for(math));
}

TEST_F(WanVaeCuda, GoldenDecodeMatchesDiffusersFp32) { check_golden(WanVaeConvMath::FP32); }
TEST_F(WanVaeCuda, GoldenDecodeMatchesDiffusersTf32) { check_golden(WanVaeConvMath::TF32); }

// A random-weight decoder of the given form, decoded on the CPU and on CUDA in both maths.
void check_against_cpu(const std::string& tag, const nlohmann::json& config, const Shape& latent, std::uint32_t seed) {
  const WanVaeConfig c = WanVaeConfig::from_json(config, tag + " config");
  TempDir dir(tag);
  write_random_wan_vae_decoder(dir.str(), c, seed);
  const Tensor z = random_latents(latent, seed + 1);
  const Tensor expected = WanVae::load(dir.str()).decode(z);
  const std::vector<double> ref = expected.to_f64_vector();
  for (WanVaeConvMath math : {WanVaeConvMath::FP32, WanVaeConvMath::TF32}) {
    const WanVae vae = WanVae::load(dir.str(), Device::CUDA, DType::F32, math);
    const Tensor video = decode_on_cuda(vae, z);
    ASSERT_EQ(video.shape(), expected.shape());
    const Errors e = compare(video, ref);
    std::printf("[wan_vae cuda %s] %s %s -> %s vs CPU: rel L2 %.3g, max abs %.3g\n", math_name(math), tag.c_str(),
                shape_str(latent).c_str(), shape_str(video.shape()).c_str(), e.rel_l2, e.max_abs);
    ASSERT_EQ(e.nonfinite, 0u) << tag << " " << math_name(math) << ": NaN/Inf in the decoded video";
    EXPECT_LE(e.rel_l2, limit_for(math)) << tag << " " << math_name(math);
  }
}

nlohmann::json small_config(int base, int z_dim, int num_res_blocks) {
  return {{"base_dim", base},
          {"z_dim", z_dim},
          {"dim_mult", {1, 2, 4, 4}},
          {"num_res_blocks", num_res_blocks},
          {"temperal_downsample", {false, true, true}},
          {"latents_mean", std::vector<double>(z_dim, 0.0)},
          {"latents_std", std::vector<double>(z_dim, 1.0)}};
}

// Wan2.1: no patch, WanUpBlock (upsamplers halve the width). Width 6 and 3 latent channels: channel
// counts that are not multiples of 4 take the kernels' scalar paths, and frame views off 256-byte
// boundaries the convolution's aligned copy.
TEST_F(WanVaeCuda, Wan21FormMatchesCpu) {
  check_against_cpu("wan21", small_config(6, 3, 1), {1, 3, 4, 2, 3}, 11);
}

// Wan2.2: residual up blocks with DupUp3D shortcuts, patch 2 (12 output channels); batch 2.
TEST_F(WanVaeCuda, Wan22FormMatchesCpu) {
  nlohmann::json j = small_config(8, 8, 2);
  j["decoder_base_dim"] = 16;
  j["is_residual"] = true;
  j["patch_size"] = 2;
  j["in_channels"] = 12;
  j["out_channels"] = 12;
  check_against_cpu("wan22", j, {2, 8, 3, 3, 5}, 21);
}

// The mid-block attention in blocks of 7 query rows (several blocks and a ragged last one) gives the
// one-block result up to the GEMMs' summation order.
TEST_F(WanVaeCuda, AttentionInQueryBlocksMatchesOneBlock) {
  const Tensor z = random_latents({1, 8, 2, 4, 5}, 3);
  WanVae vae = WanVae::load(golden_vae(), Device::CUDA, DType::F32, WanVaeConvMath::FP32);
  const Tensor one = decode_on_cuda(vae, z);
  vae.set_attention_score_bytes(7 * 20 * 4);  // 20 pixels per latent frame: 7 rows per block
  const Tensor blocked = decode_on_cuda(vae, z);
  const Errors e = compare(blocked, one.to_f64_vector());
  ASSERT_EQ(e.nonfinite, 0u);
  EXPECT_LE(e.max_abs, 1e-5);
}

// Decoding the first n latent frames gives the first 1 + 4 (n - 1) frames of the whole decode: the frame
// cache carries everything a later frame needs, on CUDA as on the CPU.
TEST_F(WanVaeCuda, DecodeIsCausal) {
  const WanVae vae = WanVae::load(golden_vae(), Device::CUDA, DType::F32, WanVaeConvMath::FP32);
  const Tensor z = random_latents({1, 8, 3, 2, 3}, 5);
  const std::vector<double> full = decode_on_cuda(vae, z).to_f64_vector();
  const std::vector<float> zv = z.to_f32_vector();
  for (std::int64_t n = 1; n < 3; ++n) {
    std::vector<float> part;
    for (std::int64_t c = 0; c < 8; ++c)
      part.insert(part.end(), zv.begin() + c * 3 * 6, zv.begin() + (c * 3 + n) * 6);
    const Tensor video = decode_on_cuda(vae, Tensor::from_f32(part, {1, 8, n, 2, 3}));
    const std::int64_t frames = video.dim(2), plane = video.dim(3) * video.dim(4);
    const std::vector<double> got = video.to_f64_vector();
    double worst = 0;
    for (std::int64_t c = 0; c < 3; ++c)
      for (std::int64_t i = 0; i < frames * plane; ++i)
        worst = std::max(worst, std::abs(got[c * frames * plane + i] - full[c * 9 * plane + i]));
    EXPECT_LE(worst, 1e-5) << "first " << n << " latent frames";
  }
}

// bf16 activations against diffusers' float64 decode of the golden case.
TEST_F(WanVaeCuda, GoldenDecodeMatchesDiffusersBf16) {
  SafetensorsFile golden(testing::golden_dir() + "/wan_tiny/cases/vae_decode_z8.safetensors");
  const Tensor z = Tensor::from_f64(golden.read_f64("input.z"), golden.info("input.z").shape, DType::F32);
  const WanVae vae = WanVae::load(golden_vae(), Device::CUDA, DType::BF16);
  EXPECT_EQ(vae.dtype(), DType::BF16);
  double seconds = 0;
  const Tensor video = decode_on_cuda(vae, z, &seconds);
  ASSERT_EQ(video.dtype(), DType::F32) << "the video stays float32";
  ASSERT_EQ(video.shape(), golden.info("output.video").shape);
  const Errors e = compare(video, golden.read_f64("output.video"));
  std::printf("[wan_vae cuda bf16] golden decode %s -> %s: %.3f s, rel L2 %.3g, max abs %.3g\n",
              shape_str(z.shape()).c_str(), shape_str(video.shape()).c_str(), seconds, e.rel_l2, e.max_abs);
  ASSERT_EQ(e.nonfinite, 0u) << "NaN/Inf in the decoded video (an unwritten or poisoned element)";
  EXPECT_LE(e.rel_l2, kBf16Limit);
  EXPECT_LE(e.max_abs, kBf16MaxAbs);
}

// bf16 against the fp32 CUDA decode (FP32 math) of the same random latents: the golden VAE at a larger
// size (4 latent frames of 12x20: 13 frames of 96x160), and both random-weight forms, Wan2.1's widths 6
// and 3 channels taking the float32 convolutions throughout (channels not multiples of 8) amid bf16
// frame ops, Wan2.2's bf16 cuDNN path with a float32 conv_out (12 channels).
void check_bf16_against_fp32(const std::string& dir, const Tensor& z, const std::string& tag) {
  const Tensor ref = decode_on_cuda(WanVae::load(dir, Device::CUDA, DType::F32, WanVaeConvMath::FP32), z);
  double seconds = 0;
  const Tensor video = decode_on_cuda(WanVae::load(dir, Device::CUDA, DType::BF16), z, &seconds);
  ASSERT_EQ(video.shape(), ref.shape());
  const Errors e = compare(video, ref.to_f64_vector());
  std::printf("[wan_vae cuda bf16] %s %s -> %s vs fp32: %.3f s, rel L2 %.3g, max abs %.3g\n", tag.c_str(),
              shape_str(z.shape()).c_str(), shape_str(video.shape()).c_str(), seconds, e.rel_l2, e.max_abs);
  ASSERT_EQ(e.nonfinite, 0u) << tag << ": NaN/Inf in the bf16 decode";
  EXPECT_LE(e.rel_l2, kBf16Limit) << tag;
  EXPECT_LE(e.max_abs, kBf16MaxAbs) << tag;
}

TEST_F(WanVaeCuda, Bf16MatchesFp32OnRandomLatents) {
  check_bf16_against_fp32(golden_vae(), random_latents({1, 8, 4, 12, 20}, 31), "golden vae");
}

TEST_F(WanVaeCuda, Bf16RandomFormsMatchFp32) {
  {
    TempDir dir("wan21_bf16");
    write_random_wan_vae_decoder(dir.str(), WanVaeConfig::from_json(small_config(6, 3, 1), "wan21"), 41);
    check_bf16_against_fp32(dir.str(), random_latents({1, 3, 4, 2, 3}, 42), "wan21 form");
  }
  nlohmann::json j = small_config(8, 8, 2);
  j["decoder_base_dim"] = 16;
  j["is_residual"] = true;
  j["patch_size"] = 2;
  j["in_channels"] = 12;
  j["out_channels"] = 12;
  TempDir dir("wan22_bf16");
  write_random_wan_vae_decoder(dir.str(), WanVaeConfig::from_json(j, "wan22"), 51);
  check_bf16_against_fp32(dir.str(), random_latents({2, 8, 3, 6, 10}, 52), "wan22 form");
}

// Runs everywhere: the dtype is checked before any device work (bf16 is a CUDA dtype; fp16 none).
TEST(WanVaeCudaLoad, Fp16IsAClearError) {
  EXPECT_THROW(WanVae::load(golden_vae(), Device::CUDA, DType::F16), UserError);
  EXPECT_THROW(WanVae::load(golden_vae(), Device::CPU, DType::BF16), UserError);
}

// In a build without CUDA or on a machine without a GPU, a CUDA load is a UserError, not a crash.
TEST(WanVaeCudaLoad, NoGpuIsAClearError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is visible";
  EXPECT_THROW(WanVae::load(golden_vae(), Device::CUDA, DType::F32), UserError);
}

}  // namespace
}  // namespace dattn
