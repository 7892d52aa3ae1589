// make-checkpoint: random weights for a model's parameter manifest, streamed into a diffusers directory.
#include "dattn/models/random_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "dattn/io/json_object.h"
#include "dattn/models/hunyuanvideo15/manifest.h"
#include "dattn/models/hunyuanvideo15_vae.h"
#include "dattn/models/text_encoder_manifest.h"
#include "dattn/models/wan/manifest.h"

namespace dattn {
namespace fs = std::filesystem;

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::uint64_t name_key(const std::string& name) {  // FNV-1a
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ULL;
  return h;
}

// N(mean, stddev) samples narrowed to `dtype` straight into dst. Element i depends only on (seed, key, i),
// so any thread may compute any chunk; a chunk is sampled into a float buffer that stays in cache and
// narrowed in the same thread, so the narrowing runs in parallel too and no tensor-sized float copy exists.
void fill_normal(std::uint8_t* dst, DType dtype, std::int64_t n, std::uint64_t seed, std::uint64_t key, float mean,
                 float stddev) {
  constexpr std::int64_t kChunk = 4096;  // even: a Box-Muller pair never straddles two chunks
  const std::uint64_t stream = splitmix64(seed ^ splitmix64(key));
  const std::size_t esize = dtype_size(dtype);
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < (n + kChunk - 1) / kChunk; ++c) {
    const std::int64_t begin = c * kChunk, len = std::min(kChunk, n - begin);
    float values[kChunk];
    for (std::int64_t j = 0; j < len; j += 2) {
      const std::uint64_t bits = splitmix64(stream + static_cast<std::uint64_t>((begin + j) / 2));
      const double u1 = (double(bits >> 32) + 0.5) / 4294967296.0;  // (0, 1): the log is finite
      const double u2 = double(bits & 0xFFFFFFFFu) / 4294967296.0;
      const double r = std::sqrt(-2.0 * std::log(u1)), a = 6.283185307179586 * u2;
      values[j] = mean + stddev * static_cast<float>(r * std::cos(a));
      if (j + 1 < len) values[j + 1] = mean + stddev * static_cast<float>(r * std::sin(a));
    }
    from_f32(values, dtype, dst + static_cast<std::size_t>(begin) * esize, static_cast<std::size_t>(len));
  }
}

struct InitSpec {
  float mean = 0, stddev = 0;
};

InitSpec init_for(const ParamSpec& p) {
  switch (p.kind) {
    case ParamKind::Weight: {
      const double fan_in = double(shape_numel(p.shape)) / double(p.shape[0]);
      return {0.0f, static_cast<float>(1.0 / std::sqrt(fan_in))};
    }
    case ParamKind::Bias: return {0.0f, 0.02f};
    case ParamKind::NormWeight: return {1.0f, 0.02f};
    case ParamKind::NormBias: return {0.0f, 0.02f};
    case ParamKind::Modulation: return {0.0f, static_cast<float>(1.0 / std::sqrt(double(p.shape.back())))};
    case ParamKind::Embedding: return {0.0f, 1.0f};  // torch's nn.Embedding init
  }
  return {};
}

std::string read_text(const std::string& path) {
  refuse_special_file(path, "--config");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open the config");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

RandomCheckpointSummary write_random_params(const std::string& out_dir, const std::string& weights_stem,
                                            const std::string& config_text, const std::vector<ParamSpec>& manifest,
                                            const std::string& model_class, const RandomCheckpointOptions& options) {
  if (options.dtype != DType::F32 && options.dtype != DType::BF16 && options.dtype != DType::F16)
    throw UserError("checkpoint dtype " + std::string(dtype_name(options.dtype)) + ": expected fp32, bf16 or fp16");
  RandomCheckpointSummary summary;
  summary.model_class = model_class;
  OutputDirectory output(out_dir, "--out");  // removed again if anything below fails
  {
    std::ofstream out(fs::path(out_dir) / "config.json", std::ios::binary);
    out << config_text;
    if (!out) throw UserError(out_dir + "/config.json: write failed");
  }
  std::vector<PlannedTensor> plan;
  for (const auto& p : manifest) {
    plan.push_back({p.name, p.keep_fp32 ? DType::F32 : options.dtype, p.shape});
    summary.parameters += static_cast<std::uint64_t>(shape_numel(p.shape));
  }
  summary.tensors = plan.size();
  summary.written = write_diffusers_weights(out_dir, weights_stem, plan, options.max_shard_bytes,
                                            [&](std::size_t i, std::uint8_t* dst) {
                                              const std::int64_t n = shape_numel(plan[i].shape);
                                              const InitSpec init = init_for(manifest[i]);
                                              fill_normal(dst, plan[i].dtype, n, options.seed, name_key(plan[i].name),
                                                          init.mean, init.stddev);
                                            });
  output.commit();
  return summary;
}

RandomCheckpointSummary write_random_checkpoint(const std::string& config_path, const std::string& out_dir,
                                                const RandomCheckpointOptions& options) {
  const std::string text = read_text(config_path);
  const nlohmann::json j = parse_json_object(text, config_path);
  // transformers configs name their class in `architectures`; diffusers' in `_class_name`.
  const auto& arch = j.contains("architectures") ? j.at("architectures") : nlohmann::json();
  if (!j.contains("_class_name") && arch.is_array() && arch.size() == 1 && arch[0].is_string()) {
    const std::string a = arch[0].get<std::string>();
    if (a == "Qwen2_5_VLTextModel")
      return write_random_params(out_dir, "model", text, qwen25vl_text_manifest(Qwen25VLTextConfig::from_json(j, config_path)),
                                 a, options);
    if (a == "T5EncoderModel")
      return write_random_params(out_dir, "model", text,
                                 t5_encoder_manifest(Umt5Config::from_json_t5_family(j, config_path)), a, options);
    throw UserError(config_path + ": 'architectures' is [\"" + a +
                    "\"]; make-checkpoint writes the text encoders Qwen2_5_VLTextModel and T5EncoderModel");
  }
  const auto& cls = j.contains("_class_name") ? j.at("_class_name") : nlohmann::json("WanTransformer3DModel");
  const std::string model_class = cls.is_string() ? cls.get<std::string>() : cls.dump();
  std::vector<ParamSpec> manifest;
  if (model_class == "WanTransformer3DModel")
    manifest = wan_transformer_manifest(WanTransformerConfig::from_json(j, config_path));
  else if (model_class == "HunyuanVideo15Transformer3DModel")
    manifest = hunyuanvideo15_transformer_manifest(HunyuanVideo15TransformerConfig::from_json(j, config_path));
  else if (model_class == "AutoencoderKLHunyuanVideo15")
    manifest = hunyuanvideo15_vae_decoder_manifest(HunyuanVideo15VaeConfig::from_json(j, config_path));
  else
    throw UserError(config_path + ": '_class_name' is \"" + model_class +
                    "\"; make-checkpoint supports WanTransformer3DModel, HunyuanVideo15Transformer3DModel and "
                    "AutoencoderKLHunyuanVideo15 (decoder only)");
  return write_random_params(out_dir, "diffusion_pytorch_model", text, manifest, model_class, options);
}

}  // namespace dattn
