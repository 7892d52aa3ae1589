// WanVaeConfig: reading and validating vae/config.json, and the shapes the decoder produces.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "dattn/core/error.h"
#include "dattn/models/wan_vae.h"
#include "models/config_fields.h"

namespace dattn {
namespace {

using json = nlohmann::json;

// Reads the fields of one config object, naming the file and field in every error.
class Fields {
 public:
  Fields(const json& j, const std::string& source) : j_(j), source_(source) {}

  [[noreturn]] void fail(const std::string& key, const std::string& expected) const {
    const std::string got = j_.contains(key) ? j_.at(key).dump() : "nothing (the field is missing)";
    throw UserError(source_ + ": '" + key + "' must be " + expected + ", got " + got);
  }
  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  int integer(const std::string& key, int min_value, std::optional<int> fallback = std::nullopt) const {
    if (!has(key)) {
      if (fallback) return *fallback;
      fail(key, "an integer >= " + std::to_string(min_value) + " (required)");
    }
    const json& v = j_.at(key);
    if (!v.is_number_integer() || v.get<long long>() < min_value || v.get<long long>() > (1 << 20))
      fail(key, "an integer >= " + std::to_string(min_value));
    return v.get<int>();
  }
  bool boolean(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_boolean()) fail(key, "true or false");
    return j_.at(key).get<bool>();
  }
  double number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_number()) fail(key, "a number");
    return j_.at(key).get<double>();
  }
  std::vector<int> int_list(const std::string& key, int min_value) const {
    const json* v = has(key) ? &j_.at(key) : nullptr;
    if (!v || !v->is_array() || v->empty()) fail(key, "a non-empty list of integers >= " + std::to_string(min_value));
    std::vector<int> out;
    for (const auto& e : *v) {
      if (!e.is_number_integer() || e.get<long long>() < min_value || e.get<long long>() > (1 << 20))
        fail(key, "a non-empty list of integers >= " + std::to_string(min_value));
      out.push_back(e.get<int>());
    }
    return out;
  }
  std::vector<double> number_list(const std::string& key, bool required) const {
    if (!has(key)) {
      if (required) fail(key, "a list of numbers (required)");
      return {};
    }
    const json& v = j_.at(key);
    if (!v.is_array()) fail(key, "a list of numbers");
    std::vector<double> out;
    for (const auto& e : v) {
      if (!e.is_number()) fail(key, "a list of numbers");
      out.push_back(e.get<double>());
    }
    return out;
  }
  std::vector<bool> bool_list(const std::string& key) const {
    if (!has(key) || !j_.at(key).is_array()) fail(key, "a list of true/false (required)");
    std::vector<bool> out;
    for (const auto& e : j_.at(key)) {
      if (!e.is_boolean()) fail(key, "a list of true/false");
      out.push_back(e.get<bool>());
    }
    return out;
  }

 private:
  const json& j_;
  const std::string& source_;
};

// Every key diffusers' AutoencoderKLWan takes. `clip_output` was an option of early Wan2.2 releases;
// diffusers removed it and always clamps, and so does dattn (the key is accepted and has no effect).
const std::set<std::string> kKnownKeys = {
    "attn_scales",   "base_dim",     "clip_output",   "decoder_base_dim", "dim_mult",
    "dropout",       "in_channels",  "is_residual",   "latents_mean",     "latents_std",
    "num_res_blocks", "out_channels", "patch_size",   "scale_factor_spatial", "scale_factor_temporal",
    "temperal_downsample", "z_dim"};

}  // namespace

WanVaeConfig WanVaeConfig::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw UserError(source + ": expected a JSON object");
  if (j.contains("_class_name") && j["_class_name"] != "AutoencoderKLWan")
    throw UserError(source + ": '_class_name' is " + j["_class_name"].dump() +
                    "; the Wan VAE loader reads \"AutoencoderKLWan\" configs only");
  for (const auto& [key, value] : j.items()) {
    (void)value;
    if (!key.starts_with("_") && !kKnownKeys.count(key))
      throw UserError(source + ": unknown field '" + key +
                      "' (not an AutoencoderKLWan option of the diffusers version dattn follows; "
                      "remove it only if you know it does not change decoding)");
  }
  const Fields f(j, source);
  WanVaeConfig c;
  c.base_dim = f.integer("base_dim", 1);
  c.decoder_base_dim = f.integer("decoder_base_dim", 1, c.base_dim);
  c.z_dim = f.integer("z_dim", 1);
  c.dim_mult = f.int_list("dim_mult", 1);
  if (c.dim_mult.size() > 8) f.fail("dim_mult", "a list of at most 8 stages");
  for (int m : c.dim_mult)
    if (std::int64_t{m} * std::max(c.decoder_base_dim, c.base_dim) > (1 << 16))
      f.fail("dim_mult", "multipliers that keep base_dim x dim_mult <= 65536 channels");
  c.num_res_blocks = f.integer("num_res_blocks", 0);
  // As the HunyuanVideo-1.5 VAE's layers_per_block: a million blocks built for 20 s, then failed as a memory error.
  if (c.num_res_blocks > 64) f.fail("num_res_blocks", "an integer from 0 to 64 (Wan's VAEs use 2)");
  c.attn_scales = f.number_list("attn_scales", false);
  c.temperal_downsample = f.bool_list("temperal_downsample");
  if (c.temperal_downsample.size() != c.dim_mult.size() - 1)
    f.fail("temperal_downsample", "a list of " + std::to_string(c.dim_mult.size() - 1) +
                                      " booleans (one per resolution change of dim_mult)");
  c.dropout = f.number("dropout", 0.0);
  // One per latent channel (z_dim); the pipeline computes z * std + mean before decoding.
  const models::ConfigFields latent(j, source);
  const auto z = static_cast<std::size_t>(c.z_dim);
  c.latents_mean = latent.number_list_in("latents_mean", z, -models::kMaxLatentOffset, models::kMaxLatentOffset, "");
  c.latents_std = latent.number_list_in("latents_std", z, models::kMinLatentScale, models::kMaxLatentScale,
                                        "a positive number");
  c.is_residual = f.boolean("is_residual", false);
  c.in_channels = f.integer("in_channels", 1, 3);
  c.out_channels = f.integer("out_channels", 1, 3);
  c.patch_size = f.integer("patch_size", 1, 1);
  if (c.out_channels % (c.patch_size * c.patch_size) != 0)
    f.fail("out_channels", "a multiple of patch_size^2 = " + std::to_string(c.patch_size * c.patch_size));
  f.boolean("clip_output", true);  // type-checked only, see kKnownKeys

  if (c.is_residual) {
    // Each upsampling stage's DupUp3D shortcut spreads copies of its input channels over
    // out_dim x factor_t x 2 x 2 outputs, so the counts must divide (diffusers asserts the same).
    const std::vector<bool> up_t = c.temporal_upsample();
    std::vector<int> dims = {c.decoder_base_dim * c.dim_mult.back()};
    for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(c.decoder_base_dim * *it);
    for (std::size_t i = 0; i + 1 < c.dim_mult.size(); ++i)
      if ((std::int64_t{dims[i + 1]} * (up_t[i] ? 8 : 4)) % dims[i] != 0)
        f.fail("dim_mult", "widths whose residual upsampling shortcuts divide evenly (decoder stage " +
                               std::to_string(i) + ": " + std::to_string(dims[i]) + " -> " +
                               std::to_string(dims[i + 1]) + " channels)");
  }

  // The scale factors follow from the architecture; when given they must agree with it.
  int ups_t = 1;
  for (bool t : c.temperal_downsample) ups_t *= t ? 2 : 1;
  const int ups_s = (1 << (c.dim_mult.size() - 1)) * c.patch_size;
  c.scale_factor_temporal = f.integer("scale_factor_temporal", 1, ups_t);
  c.scale_factor_spatial = f.integer("scale_factor_spatial", 1, ups_s);
  if (c.scale_factor_temporal != ups_t)
    f.fail("scale_factor_temporal", std::to_string(ups_t) + " (the product of the temporal upsamplings)");
  if (c.scale_factor_spatial != ups_s)
    f.fail("scale_factor_spatial", std::to_string(ups_s) + " (2^(len(dim_mult)-1) x patch_size)");
  return c;
}

json WanVaeConfig::to_json() const {
  return json{{"_class_name", "AutoencoderKLWan"},
              {"attn_scales", attn_scales},
              {"base_dim", base_dim},
              {"decoder_base_dim", decoder_base_dim},
              {"dim_mult", dim_mult},
              {"dropout", dropout},
              {"in_channels", in_channels},
              {"is_residual", is_residual},
              {"latents_mean", latents_mean},
              {"latents_std", latents_std},
              {"num_res_blocks", num_res_blocks},
              {"out_channels", out_channels},
              {"patch_size", patch_size == 1 ? json(nullptr) : json(patch_size)},
              {"scale_factor_spatial", scale_factor_spatial},
              {"scale_factor_temporal", scale_factor_temporal},
              {"temperal_downsample", temperal_downsample},
              {"z_dim", z_dim}};
}

std::vector<bool> WanVaeConfig::temporal_upsample() const {
  return {temperal_downsample.rbegin(), temperal_downsample.rend()};
}

Shape WanVaeConfig::video_shape(const Shape& z) const {
  if (z.size() != 5 || z[1] != z_dim || z[0] < 1 || z[2] < 1 || z[3] < 1 || z[4] < 1)
    throw UserError("Wan VAE decode: latents have shape " + shape_str(z) + ", expected [B, " +
                    std::to_string(z_dim) + " (z_dim), T, H, W] with every size >= 1");
  return {z[0], video_channels(), 1 + scale_factor_temporal * (z[2] - 1), z[3] * scale_factor_spatial,
          z[4] * scale_factor_spatial};
}

Tensor denormalize_latents(const Tensor& z, const WanVaeConfig& config) {
  if (z.ndim() < 2 || z.dim(1) != config.z_dim)
    throw UserError("denormalize_latents: latents have shape " + z.describe() + ", expected [B, " +
                    std::to_string(config.z_dim) + " (z_dim), ...]");
  if (z.device() != Device::CPU) throw UserError("denormalize_latents: latents must be on the CPU, got " + z.describe());
  Tensor out = z.dtype() == DType::F32 ? z.clone() : z.to(DType::F32);
  float* p = out.data_as<float>();
  const std::int64_t inner = z.numel() / (z.dim(0) * z.dim(1));
  for (std::int64_t b = 0; b < z.dim(0); ++b)
    for (int c = 0; c < config.z_dim; ++c) {
      // Exactly the Wan pipelines' float32 arithmetic: std and mean rounded to float32, then
      // z / (1 / std) + mean.
      const float inv_std = 1.0f / static_cast<float>(config.latents_std[c]);
      const float mean = static_cast<float>(config.latents_mean[c]);
      float* q = p + (b * config.z_dim + c) * inner;
      for (std::int64_t i = 0; i < inner; ++i) q[i] = q[i] / inv_std + mean;
    }
  return out;
}

}  // namespace dattn
