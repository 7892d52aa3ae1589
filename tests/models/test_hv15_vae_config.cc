// The HunyuanVideo-1.5 VAE's configuration (the golden tiny one, diffusers' defaults, the full-size file in
// configs/), its errors, the decoder manifest against the golden checkpoint, the latent unscaling, and
// random decode-only checkpoints written by make-checkpoint's writer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/io/safetensors.h"
#include "dattn/models/hunyuanvideo15_vae.h"
#include "dattn/models/random_checkpoint.h"
#include "models/hv15_vae_test_util.h"
#include "models/vae_test_inputs.h"
#include "support/config_error.h"

namespace fs = std::filesystem;

namespace dattn {
namespace {

using testing::hv15_vae_dir;

nlohmann::json golden_config() { return read_component_config(hv15_vae_dir()); }

TEST(Hv15Vae, ConfigReadsTheGoldenFieldsAndDiffusersDefaults) {
  const HunyuanVideo15VaeConfig c = HunyuanVideo15VaeConfig::from_json(golden_config());
  EXPECT_EQ(c.latent_channels, 8);
  EXPECT_EQ(c.block_out_channels, (std::vector<int>{4, 8, 8, 16, 16}));
  EXPECT_EQ(c.decoder_channels(), (std::vector<int>{16, 16, 8, 8, 4}));
  EXPECT_EQ(c.video_shape({2, 8, 3, 3, 4}), (Shape{2, 3, 9, 48, 64}));
  EXPECT_TRUE(c.temporal_upsample(1));
  EXPECT_FALSE(c.temporal_upsample(2));
  EXPECT_TRUE(c.spatial_upsample(3));
  EXPECT_FALSE(c.spatial_upsample(4));
  EXPECT_DOUBLE_EQ(c.scaling_factor, 1.03682);
  // An empty config is diffusers' defaults, which the full-size file in configs/ spells out.
  const HunyuanVideo15VaeConfig d = HunyuanVideo15VaeConfig::from_json(nlohmann::json::object());
  std::ifstream in(testing::golden_dir() + "/../../configs/hunyuanvideo1.5-480p-t2v/vae.json");
  ASSERT_TRUE(in) << "configs/hunyuanvideo1.5-480p-t2v/vae.json";
  EXPECT_EQ(HunyuanVideo15VaeConfig::from_json(nlohmann::json::parse(in)).to_json(), d.to_json());
  EXPECT_EQ(d.block_out_channels, (std::vector<int>{128, 256, 512, 1024, 1024}));
  EXPECT_EQ(d.latent_channels, 32);
  EXPECT_EQ(HunyuanVideo15VaeConfig::from_json(c.to_json()).to_json(), c.to_json());
}

TEST(Hv15Vae, BadConfigIsAClearError) {
  struct Edit {
    const char* what;
    std::function<void(nlohmann::json&)> apply;
    std::vector<std::string> fragments;
  };
  const std::vector<Edit> edits = {
      {"string latent_channels", [](auto& j) { j["latent_channels"] = "8"; }, {"'latent_channels'", "\"8\""}},
      {"latent width not dividing", [](auto& j) { j["latent_channels"] = 6; }, {"'latent_channels'", "divisor", "16"}},
      {"empty block_out_channels",
       [](auto& j) { j["block_out_channels"] = nlohmann::json::array(); },
       {"'block_out_channels'", "non-empty"}},
      {"spatial ratio not a power of two",
       [](auto& j) { j["spatial_compression_ratio"] = 12; },
       {"'spatial_compression_ratio'", "power of two"}},
      {"spatial ratio beyond the blocks",
       [](auto& j) { j["spatial_compression_ratio"] = 32; },
       {"'spatial_compression_ratio'", "below 2^5"}},
      {"temporal above spatial",
       [](auto& j) { j["temporal_compression_ratio"] = 32; },
       {"'temporal_compression_ratio'", "up to spatial_compression_ratio 16"}},
      {"up-sampler widths",
       [](auto& j) {
         j["block_out_channels"] = {4, 8, 8, 12, 16};
       },
       {"'block_out_channels'", "12 -> 8 (space and time)", "multiple of 8"}},
      {"unknown option", [](auto& j) { j["use_tiling"] = true; }, {"unknown field 'use_tiling'"}},
      {"another class", [](auto& j) { j["_class_name"] = "AutoencoderKLWan"; }, {"AutoencoderKLHunyuanVideo15"}},
      {"negative scaling", [](auto& j) { j["scaling_factor"] = -1.0; }, {"'scaling_factor'", "positive"}},
      // 1 / 1e-45 is Inf in float32: a video of Inf that was blamed on the VAE's weights.
      {"tiny scaling", [](auto& j) { j["scaling_factor"] = 1e-45; },
       {"'scaling_factor'", "from 0.0001 to 10000", "1e-45"}},
      {"huge scaling", [](auto& j) { j["scaling_factor"] = 1e39; }, {"'scaling_factor'", "from 0.0001 to 10000"}},
  };
  for (const Edit& e : edits) {
    nlohmann::json j = golden_config();
    e.apply(j);
    const std::string msg = user_error([&] { HunyuanVideo15VaeConfig::from_json(j, "vae/config.json"); });
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NE(msg.find("vae/config.json"), std::string::npos) << e.what << ": " << msg;
    for (const auto& f : e.fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << e.what << ": '" << f << "' not in: " << msg;
  }
}

// The manifest lists exactly the golden checkpoint's decoder tensors, with their shapes.
TEST(Hv15Vae, ManifestMatchesTheGoldenCheckpoint) {
  const SafetensorsFile f(hv15_vae_dir() + "/diffusion_pytorch_model.safetensors");
  std::map<std::string, Shape> expected;
  for (const auto& [name, info] : f.tensors())
    if (name.starts_with("decoder.")) expected[name] = info.shape;
  std::map<std::string, Shape> listed;
  for (const ParamSpec& p : hunyuanvideo15_vae_decoder_manifest(HunyuanVideo15VaeConfig::from_json(golden_config())))
    listed[p.name] = p.shape;
  EXPECT_EQ(listed, expected);
}

TEST(Hv15Vae, UnscaleLatentsDividesByTheScalingFactor) {
  const HunyuanVideo15VaeConfig c = HunyuanVideo15VaeConfig::from_json(golden_config());
  const Tensor z = testing::random_latents({1, 8, 2, 2, 3}, 4);
  const std::vector<float> zv = z.to_f32_vector(), got = hunyuanvideo15_unscale_latents(z, c).to_f32_vector();
  for (std::size_t i = 0; i < zv.size(); ++i) EXPECT_EQ(got[i], static_cast<float>(double(zv[i]) / 1.03682)) << i;
  EXPECT_THROW(hunyuanvideo15_unscale_latents(testing::random_latents({1, 4, 2, 2, 3}, 4), c), UserError);
}

TEST(Hv15Vae, LoadAndDecodeErrorsAreClear) {
  EXPECT_THROW(HunyuanVideo15Vae::load(hv15_vae_dir(), Device::CPU, DType::BF16), UserError);
  const HunyuanVideo15Vae vae = HunyuanVideo15Vae::load(hv15_vae_dir());
  const std::string msg = user_error([&] { vae.decode(Tensor::zeros({1, 4, 2, 2, 2}, DType::F32)); });
  EXPECT_NE(msg.find("[B, 8, T, H, W]"), std::string::npos) << msg;
  EXPECT_THROW(vae.decode(Tensor::zeros({8, 2, 2, 2}, DType::F32)), UserError);
}

// make-checkpoint's writer on a VAE config: a decode-only directory (float32 even when bf16 is asked)
// that loads and decodes to finite values; a small form whose widths (6, 12) take the kernels' scalar paths.
TEST(Hv15Vae, RandomCheckpointLoadsAndDecodes) {
  const fs::path root = fs::temp_directory_path() / ("dattn_hv15_vae_random_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  nlohmann::json j = {{"_class_name", "AutoencoderKLHunyuanVideo15"},
                      {"latent_channels", 4},
                      {"block_out_channels", {6, 12, 16, 16}},
                      {"spatial_compression_ratio", 8}};
  std::ofstream(root / "vae.json") << j.dump();
  RandomCheckpointOptions o;
  o.seed = 7;
  const RandomCheckpointSummary s = write_random_checkpoint((root / "vae.json").string(), (root / "vae").string(), o);
  EXPECT_EQ(s.model_class, "AutoencoderKLHunyuanVideo15");
  const SafetensorsFile f((root / "vae" / "diffusion_pytorch_model.safetensors").string());
  for (const auto& [name, info] : f.tensors()) EXPECT_EQ(info.dtype, "F32") << name;
  const HunyuanVideo15Vae vae = HunyuanVideo15Vae::load((root / "vae").string());
  const Tensor video = vae.decode(testing::random_latents({1, 4, 2, 2, 3}, 9));
  EXPECT_EQ(video.shape(), (Shape{1, 3, 5, 16, 24}));
  double sq = 0;
  for (double v : video.to_f64_vector()) {
    ASSERT_TRUE(std::isfinite(v));
    sq += v * v;
  }
  EXPECT_GT(sq, 0.0);
  fs::remove_all(root);
}

}  // namespace
}  // namespace dattn
