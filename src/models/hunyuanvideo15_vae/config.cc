// HunyuanVideo15VaeConfig: reading and validating vae/config.json, the decoder's block structure, the
// shapes it produces, and the pipeline's latent unscaling.
#include <cstdint>
#include <set>
#include <string>

#include "dattn/core/error.h"
#include "dattn/models/hunyuanvideo15_vae.h"
#include "dattn/ops/combine.h"
#include "models/config_fields.h"

namespace dattn {
namespace {

using json = nlohmann::json;

// Every key diffusers' AutoencoderKLHunyuanVideo15 takes; another is refused, as it may change decoding.
const std::set<std::string> kKnownKeys = {"in_channels",
                                          "out_channels",
                                          "latent_channels",
                                          "block_out_channels",
                                          "layers_per_block",
                                          "spatial_compression_ratio",
                                          "temporal_compression_ratio",
                                          "downsample_match_channel",
                                          "upsample_match_channel",
                                          "scaling_factor"};

int log2_exact(int v) {
  int n = 0;
  while ((1 << n) < v) ++n;
  return (1 << n) == v ? n : -1;
}

std::vector<int> channel_list(const json& j, const models::ConfigFields& f, const std::string& key,
                              const std::vector<int>& fallback) {
  if (!f.given(key)) return fallback;
  const json& v = j.at(key);
  const std::string what = "a non-empty list of channel counts from 1 to 65536";
  if (!v.is_array() || v.empty() || v.size() > 16) f.fail(key, what);
  std::vector<int> out;
  for (const json& e : v) {
    if (!e.is_number_integer() || e.get<long long>() < 1 || e.get<long long>() > 65536) f.fail(key, what);
    out.push_back(e.get<int>());
  }
  return out;
}

int small_int(const models::ConfigFields& f, const std::string& key, int fallback, int max_value) {
  const std::int64_t v = f.positive(key, fallback);
  if (v > max_value) f.fail(key, "an integer from 1 to " + std::to_string(max_value));
  return static_cast<int>(v);
}

}  // namespace

HunyuanVideo15VaeConfig HunyuanVideo15VaeConfig::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw UserError(source + ": expected a JSON object");
  if (j.contains("_class_name") && j["_class_name"] != "AutoencoderKLHunyuanVideo15")
    throw UserError(source + ": '_class_name' is " + j["_class_name"].dump() +
                    "; the HunyuanVideo-1.5 VAE loader reads \"AutoencoderKLHunyuanVideo15\" configs only");
  for (const auto& [key, value] : j.items()) {
    (void)value;
    if (!key.starts_with("_") && !kKnownKeys.count(key))
      throw UserError(source + ": unknown field '" + key +
                      "' (not an AutoencoderKLHunyuanVideo15 option of the diffusers version dattn follows)");
  }
  const models::ConfigFields f(j, source);
  HunyuanVideo15VaeConfig c;
  c.in_channels = small_int(f, "in_channels", c.in_channels, 64);
  c.out_channels = small_int(f, "out_channels", c.out_channels, 64);
  c.latent_channels = small_int(f, "latent_channels", c.latent_channels, 4096);
  c.block_out_channels = channel_list(j, f, "block_out_channels", c.block_out_channels);
  if (f.given("layers_per_block")) {
    const json& v = j.at("layers_per_block");
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 64)
      f.fail("layers_per_block", "an integer from 0 to 64");
    c.layers_per_block = v.get<int>();
  }
  c.spatial_compression_ratio = small_int(f, "spatial_compression_ratio", c.spatial_compression_ratio, 1 << 10);
  c.temporal_compression_ratio = small_int(f, "temporal_compression_ratio", c.temporal_compression_ratio, 1 << 10);
  c.downsample_match_channel = f.boolean("downsample_match_channel", c.downsample_match_channel);
  c.upsample_match_channel = f.boolean("upsample_match_channel", c.upsample_match_channel);
  c.scaling_factor = f.number_in("scaling_factor", c.scaling_factor, models::kMinLatentScale, models::kMaxLatentScale,
                                 "a positive number");

  const int blocks = static_cast<int>(c.block_out_channels.size());
  const int ls = log2_exact(c.spatial_compression_ratio), lt = log2_exact(c.temporal_compression_ratio);
  if (ls < 0 || ls >= blocks)
    f.fail("spatial_compression_ratio", "a power of two below 2^" + std::to_string(blocks) +
                                            " (one up-sampling block per factor 2, and one block after them)");
  if (lt < 0 || lt > ls)
    f.fail("temporal_compression_ratio", "a power of two up to spatial_compression_ratio " +
                                             std::to_string(c.spatial_compression_ratio));
  // The channel arithmetic diffusers' decoder needs to run at all (its repeat_interleave and views).
  const std::vector<int> dec = c.decoder_channels();
  if (dec[0] % c.latent_channels != 0)
    f.fail("latent_channels", "a divisor of the decoder's first width " + std::to_string(dec[0]));
  for (int i = 0; i < ls; ++i) {
    const int in = dec[i], out = c.upsample_match_channel ? dec[i + 1] : dec[i];
    const bool t = c.temporal_upsample(i);
    const bool ok = t ? (in % 8 == 0 && (4 * out) % in == 0) : ((4 * out) % in == 0);
    if (!ok)
      f.fail("block_out_channels", "widths whose up-sampler " + std::to_string(in) + " -> " + std::to_string(out) +
                                       (t ? " (space and time) needs the input a multiple of 8 and 4 x output a "
                                            "multiple of the input"
                                          : " (space) needs 4 x output a multiple of the input"));
  }
  return c;
}

json HunyuanVideo15VaeConfig::to_json() const {
  return json{{"_class_name", "AutoencoderKLHunyuanVideo15"},
              {"in_channels", in_channels},
              {"out_channels", out_channels},
              {"latent_channels", latent_channels},
              {"block_out_channels", block_out_channels},
              {"layers_per_block", layers_per_block},
              {"spatial_compression_ratio", spatial_compression_ratio},
              {"temporal_compression_ratio", temporal_compression_ratio},
              {"downsample_match_channel", downsample_match_channel},
              {"upsample_match_channel", upsample_match_channel},
              {"scaling_factor", scaling_factor}};
}

std::vector<int> HunyuanVideo15VaeConfig::decoder_channels() const {
  return std::vector<int>(block_out_channels.rbegin(), block_out_channels.rend());
}

bool HunyuanVideo15VaeConfig::spatial_upsample(int block) const { return (1 << block) < spatial_compression_ratio; }
bool HunyuanVideo15VaeConfig::temporal_upsample(int block) const { return (1 << block) < temporal_compression_ratio; }

Shape HunyuanVideo15VaeConfig::video_shape(const Shape& z) const {
  if (z.size() != 5 || z[1] != latent_channels || z[0] < 1 || z[2] < 1 || z[3] < 1 || z[4] < 1)
    throw UserError("HunyuanVideo-1.5 VAE decode: latents " + shape_str(z) + ", expected [B, " +
                    std::to_string(latent_channels) + ", T, H, W] with every size positive");
  return {z[0], out_channels, 1 + temporal_compression_ratio * (z[2] - 1), z[3] * spatial_compression_ratio,
          z[4] * spatial_compression_ratio};
}

Tensor hunyuanvideo15_unscale_latents(const Tensor& z, const HunyuanVideo15VaeConfig& config) {
  if (z.ndim() < 2 || z.dim(1) != config.latent_channels)
    throw UserError("HunyuanVideo-1.5 VAE: latents " + z.describe() + " do not have " +
                    std::to_string(config.latent_channels) + " channels in dimension 1");
  const Tensor x = (z.dtype() == DType::F32 || z.dtype() == DType::F64) ? z : ops::cast(z, DType::F32);
  return ops::linear_combination({{1.0 / config.scaling_factor, x}}, DType::F32);
}

}  // namespace dattn
