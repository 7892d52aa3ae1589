// The Wan VAE decoder against diffusers (golden wan_tiny vae_decode_z8: AutoencoderKLWan in its Wan2.2
// form, decoded in float64), plus its configuration errors and the latent de-normalisation.
#include <gtest/gtest.h>

#include "dattn/core/device.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

#include "dattn/core/error.h"
#include "dattn/io/safetensors.h"
#include "dattn/models/wan_vae.h"
#include "support/golden_dir.h"

namespace fs = std::filesystem;
using namespace dattn;

namespace {

std::string vae_dir() { return dattn::testing::golden_dir() + "/wan_tiny/pipeline/vae"; }

nlohmann::json golden_config() {
  std::ifstream in(vae_dir() + "/config.json");
  return nlohmann::json::parse(in);
}

TEST(WanVae, DecodeMatchesDiffusers) {
  SafetensorsFile golden(dattn::testing::golden_dir() + "/wan_tiny/cases/vae_decode_z8.safetensors");
  const TensorInfo& zi = golden.info("input.z");
  const TensorInfo& vi = golden.info("output.video");
  const Tensor z = Tensor::from_f64(golden.read_f64("input.z"), zi.shape, DType::F32);
  const std::vector<double> expected = golden.read_f64("output.video");

  const WanVae vae = WanVae::load(vae_dir());
  ASSERT_EQ(vae.config().video_shape(z.shape()), vi.shape);
  const auto t0 = std::chrono::steady_clock::now();
  const Tensor video = vae.decode(z);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(video.shape(), vi.shape);

  const std::vector<double> got = video.to_f64_vector();
  std::size_t non_finite = 0;
  for (double v : got) non_finite += !std::isfinite(v);
  ASSERT_EQ(non_finite, 0u) << "NaN/Inf in the decoded video";

  double err2 = 0, ref2 = 0, max_abs = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    err2 += (got[i] - expected[i]) * (got[i] - expected[i]);
    ref2 += expected[i] * expected[i];
    max_abs = std::max(max_abs, std::abs(got[i] - expected[i]));
  }
  const double rel = std::sqrt(err2 / ref2);
  std::printf("[wan_vae] decode %s -> %s on CPU: %.3f s, rel L2 %.3g, max abs %.3g\n", shape_str(z.shape()).c_str(),
              shape_str(video.shape()).c_str(), seconds, rel, max_abs);
  // float32 against diffusers' float64 decode: the golden README expects ~1e-5 for a whole video.
  EXPECT_LE(rel, 1e-5);
}

TEST(WanVae, WarmUpChangesNoLaterDecode) {
  SafetensorsFile golden(dattn::testing::golden_dir() + "/wan_tiny/cases/vae_decode_z8.safetensors");
  const Tensor z = Tensor::from_f64(golden.read_f64("input.z"), golden.info("input.z").shape, DType::F32);
  const WanVae vae = WanVae::load(vae_dir());
  const std::vector<double> before = vae.decode(z).to_f64_vector();
  vae.warm_up();
  EXPECT_EQ(vae.decode(z).to_f64_vector(), before);
}

TEST(WanVae, ConfigReadsTheGoldenFields) {
  const WanVaeConfig c = WanVaeConfig::from_json(golden_config());
  EXPECT_EQ(c.z_dim, 8);
  EXPECT_EQ(c.base_dim, 8);
  EXPECT_EQ(c.decoder_base_dim, 16);
  EXPECT_EQ(c.patch_size, 2);
  EXPECT_TRUE(c.is_residual);
  EXPECT_EQ(c.video_channels(), 3);
  EXPECT_EQ(c.temporal_upsample(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(c.video_shape({2, 8, 5, 3, 7}), (Shape{2, 3, 17, 48, 112}));
}

// Each edit of the golden config must fail with one line naming the field and the expectation.
TEST(WanVae, BadConfigIsAClearError) {
  struct Edit {
    const char* what;
    std::function<void(nlohmann::json&)> apply;
    std::vector<std::string> fragments;
  };
  const std::vector<Edit> edits = {
      {"missing z_dim", [](auto& j) { j.erase("z_dim"); }, {"'z_dim'", "required", "missing"}},
      {"string z_dim", [](auto& j) { j["z_dim"] = "8"; }, {"'z_dim'", "integer", "\"8\""}},
      {"short temperal_downsample", [](auto& j) { j["temperal_downsample"] = {true}; },
       {"'temperal_downsample'", "3 booleans"}},
      {"latents_mean of the wrong length", [](auto& j) { j["latents_mean"] = {0.0, 1.0}; },
       {"'latents_mean'", "8 numbers"}},
      {"unknown option", [](auto& j) { j["use_spatial_tiling"] = true; }, {"unknown field 'use_spatial_tiling'"}},
      {"another class", [](auto& j) { j["_class_name"] = "AutoencoderKL"; }, {"AutoencoderKLWan"}},
      {"out_channels vs patch", [](auto& j) { j["out_channels"] = 10; }, {"'out_channels'", "patch_size^2 = 4"}},
      {"inconsistent scale factor", [](auto& j) { j["scale_factor_spatial"] = 8; }, {"'scale_factor_spatial'", "16"}},
      {"shortcut widths that do not divide", [](auto& j) { j["dim_mult"] = {1, 2, 3, 4}; },
       {"'dim_mult'", "decoder stage 2: 48 -> 32"}},
      {"empty dim_mult", [](auto& j) { j["dim_mult"] = nlohmann::json::array(); }, {"'dim_mult'", "non-empty"}},
      // A million blocks were built (20 s, 4.8 GB) before a memory error that blamed the request's size.
      {"num_res_blocks past 64", [](auto& j) { j["num_res_blocks"] = 65; }, {"'num_res_blocks'", "0 to 64"}},
      // The pipeline computes z * std + mean: a std of 1e-45 or a mean of 1e30 decoded to NaN or Inf, blamed
      // on the VAE's weights.
      {"tiny latents_std", [](auto& j) { j["latents_std"][2] = 1e-45; },
       {"'latents_std'", "positive number from 0.0001 to 10000", "got 1e-45 at index 2"}},
      {"negative latents_std", [](auto& j) { j["latents_std"][0] = -1.0; }, {"'latents_std'", "at index 0"}},
      {"huge latents_mean", [](auto& j) { j["latents_mean"][7] = 1e30; },
       {"'latents_mean'", "from -10000 to 10000", "got 1e+30 at index 7"}},
      {"string latents_mean", [](auto& j) { j["latents_mean"][1] = "0"; }, {"'latents_mean'", "at index 1"}},
  };
  for (const Edit& e : edits) {
    nlohmann::json j = golden_config();
    e.apply(j);
    try {
      WanVaeConfig::from_json(j, "vae/config.json");
      ADD_FAILURE() << e.what << ": no error";
    } catch (const UserError& err) {
      const std::string msg = err.what();
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_NE(msg.find("vae/config.json"), std::string::npos) << msg;
      for (const auto& f : e.fragments) EXPECT_NE(msg.find(f), std::string::npos) << e.what << ": '" << f << "' not in: " << msg;
    }
  }
}

// A config whose architecture does not match the weights fails at load, naming the tensor and shapes.
TEST(WanVae, WeightsOfAnotherConfigAreAClearError) {
  const fs::path dir = fs::temp_directory_path() / ("dattn_wan_vae_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(vae_dir() + "/diffusion_pytorch_model.safetensors", dir / "diffusion_pytorch_model.safetensors");
  nlohmann::json j = golden_config();
  j["decoder_base_dim"] = 8;
  std::ofstream(dir / "config.json") << j.dump();
  try {
    WanVae::load(dir.string());
    ADD_FAILURE() << "no error";
  } catch (const UserError& err) {
    const std::string msg = err.what();
    EXPECT_NE(msg.find("decoder.conv_in.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected [32,8,3,3,3]"), std::string::npos) << msg;
  }
  fs::remove_all(dir);
}

TEST(WanVae, UnsupportedDeviceOrDtypeIsAClearError) {
  EXPECT_THROW(WanVae::load(vae_dir(), Device::CPU, DType::BF16), UserError);
  if (cuda_device_count() == 0) {
    EXPECT_THROW(WanVae::load(vae_dir(), Device::CUDA, DType::F32), UserError);
  }
}

TEST(WanVae, DecodeRejectsLatentsOfTheWrongShape) {
  const WanVae vae = WanVae::load(vae_dir());
  EXPECT_THROW(vae.decode(Tensor::zeros({1, 4, 2, 2, 2}, DType::F32)), UserError);  // z_dim 8 expected
  EXPECT_THROW(vae.decode(Tensor::zeros({8, 2, 2, 2}, DType::F32)), UserError);     // no batch dimension
}

// denormalize_latents is z * std + mean per channel (computed as the pipelines do, z / (1 / std) + mean).
TEST(WanVae, DenormalizeLatents) {
  const WanVaeConfig c = WanVaeConfig::from_json(golden_config());
  std::vector<float> values;
  for (int b = 0; b < 2; ++b)
    for (int ch = 0; ch < 8; ++ch)
      for (int i = 0; i < 3; ++i) values.push_back(static_cast<float>(b * 100 + ch * 10 + i) - 40.0f);
  const Tensor z = Tensor::from_f32(values, {2, 8, 3, 1, 1});
  const std::vector<float> out = denormalize_latents(z, c).to_f32_vector();
  for (int b = 0; b < 2; ++b)
    for (int ch = 0; ch < 8; ++ch)
      for (int i = 0; i < 3; ++i) {
        const std::size_t k = (b * 8 + ch) * 3 + i;
        // latents_mean = 0.1 * ch, latents_std = 1 + 0.05 * ch in the golden config.
        EXPECT_NEAR(out[k], values[k] * (1.0 + 0.05 * ch) + 0.1 * ch, 1e-4) << "b=" << b << " ch=" << ch;
      }
  EXPECT_THROW(denormalize_latents(Tensor::zeros({1, 4, 2}, DType::F32), c), UserError);
}

}  // namespace
