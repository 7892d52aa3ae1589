// The Wan VAE decoder's structure beyond the golden case: the tensor list against the golden checkpoint,
// the Wan2.1 form (no golden data: random weights, shapes and invariants only), causality of the
// streamed decode and batch handling.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "dattn/io/weight_store.h"
#include "dattn/models/wan_vae.h"
#include "models/vae_test_inputs.h"
#include "support/golden_dir.h"

namespace fs = std::filesystem;
using namespace dattn;

namespace {

using dattn::testing::golden_vae;
using dattn::testing::random_latents;

// x[:, :, t0 : t0 + n] of a [B, C, T, H, W] tensor, or of the batch range [b0, b0 + nb).
Tensor slice(const Tensor& x, std::int64_t b0, std::int64_t nb, std::int64_t t0, std::int64_t n) {
  const std::int64_t c = x.dim(1), t = x.dim(2), plane = x.dim(3) * x.dim(4);
  Tensor out = Tensor::empty({nb, c, n, x.dim(3), x.dim(4)}, DType::F32);
  for (std::int64_t b = 0; b < nb; ++b)
    for (std::int64_t ch = 0; ch < c; ++ch)
      std::copy_n(x.data_as<float>() + (((b0 + b) * c + ch) * t + t0) * plane, n * plane,
                  out.data_as<float>() + ((b * c + ch) * n) * plane);
  return out;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double m = 0;
  const auto x = a.to_f64_vector(), y = b.to_f64_vector();
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("dattn_wan_vae_rand_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

TEST(WanVaeStructure, TensorListMatchesTheGoldenCheckpoint) {
  const WanVaeConfig c = WanVaeConfig::from_json(read_component_config(golden_vae()));
  WeightStore store(golden_vae());
  std::map<std::string, Shape> expected;
  for (const auto& name : store.names())
    if (name.starts_with("decoder.") || name.starts_with("post_quant_conv.")) expected[name] = store.info(name).shape;
  std::map<std::string, Shape> listed;
  for (const auto& [name, shape] : wan_vae_decoder_tensors(c)) listed[name] = shape;
  EXPECT_EQ(listed, expected);
}

TEST(WanVaeStructure, ConfigRoundTripsThroughJson) {
  const WanVaeConfig c = WanVaeConfig::from_json(read_component_config(golden_vae()));
  const WanVaeConfig d = WanVaeConfig::from_json(c.to_json());
  EXPECT_EQ(d.to_json(), c.to_json());
  EXPECT_EQ(d.patch_size, 2);
}

// Decoding the first n latent frames gives the first 1 + 4 (n - 1) frames of the whole decode (the causal
// cache carries everything), and a batch decodes like its items one by one.
void check_causal_and_batched(const WanVae& vae, const Tensor& z) {
  const Tensor full = vae.decode(z);
  for (std::int64_t n = 1; n < z.dim(2); ++n) {
    const Tensor part = vae.decode(slice(z, 0, z.dim(0), 0, n));
    EXPECT_EQ(max_abs_diff(part, slice(full, 0, z.dim(0), 0, part.dim(2))), 0.0) << "first " << n << " latent frames";
  }
  for (std::int64_t b = 0; b < z.dim(0); ++b)
    EXPECT_EQ(max_abs_diff(vae.decode(slice(z, b, 1, 0, z.dim(2))), slice(full, b, 1, 0, full.dim(2))), 0.0)
        << "batch item " << b;
}

TEST(WanVaeStructure, Wan22DecodeIsCausalAndBatched) {
  const WanVae vae = WanVae::load(golden_vae());
  check_causal_and_batched(vae, random_latents({2, 8, 3, 2, 3}, 5));
}

// The Wan2.1 form (WanUpBlock: no shortcut, upsamplers halve the width, no patch) on random weights.
TEST(WanVaeStructure, Wan21FormDecodes) {
  WanVaeConfig c;
  c.base_dim = c.decoder_base_dim = 8;
  c.z_dim = 4;
  c.num_res_blocks = 1;
  c.latents_mean.assign(4, 0.0);
  c.latents_std.assign(4, 1.0);
  c = WanVaeConfig::from_json(c.to_json());  // validates and derives the scale factors
  EXPECT_EQ(c.scale_factor_spatial, 8);
  TempDir dir;
  write_random_wan_vae_decoder(dir.str(), c, 3);
  const WanVae vae = WanVae::load(dir.str());
  const Tensor z = random_latents({1, 4, 3, 2, 3}, 9);
  const Tensor video = vae.decode(z);
  ASSERT_EQ(video.shape(), (Shape{1, 3, 9, 16, 24}));
  double sum2 = 0;
  for (double v : video.to_f64_vector()) {
    ASSERT_TRUE(std::isfinite(v));
    ASSERT_LE(std::abs(v), 1.0);
    sum2 += v * v;
  }
  EXPECT_GT(sum2, 0.0);
  check_causal_and_batched(vae, random_latents({2, 4, 3, 2, 3}, 11));
}

}  // namespace
