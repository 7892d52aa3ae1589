// The pipeline registry: model_index.json's _class_name -> the family that runs it. A new family adds
// its folder under src/pipeline/ and one line to kFamilies.
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/pipeline/hunyuanvideo15/hv15_pipeline.h"
#include "dattn/pipeline/pipeline.h"
#include "dattn/pipeline/wan/wan_pipeline.h"
#include "pipeline/common/model_index.h"

namespace dattn {
namespace {

struct Family {
  const char* class_name;
  std::unique_ptr<Pipeline> (*make)(const std::string& dir, const PipelineOptions& options);
};

constexpr Family kFamilies[] = {
    {"WanPipeline", &make_wan_pipeline},
    {"HunyuanVideo15Pipeline", &make_hv15_pipeline},
};

}  // namespace

DType pipeline_vae_dtype(const PipelineOptions& options) {
  if (!options.vae_dtype)
    return options.device == Device::CUDA && options.dtype == DType::BF16 ? DType::BF16 : DType::F32;
  const DType d = *options.vae_dtype;
  if (d != DType::F32 && d != DType::BF16)
    throw UserError("VAE dtype " + std::string(dtype_name(d)) + ": expected fp32 or bf16 (bf16 on cuda only)");
  if (d == DType::BF16 && options.device != Device::CUDA)
    throw UserError("VAE dtype bf16 on " + std::string(device_name(options.device)) +
                    ": the CPU VAE decoders compute in fp32 only; use fp32 (or run on cuda)");
  return d;
}

std::vector<std::string> registered_pipeline_classes() {
  std::vector<std::string> out;
  for (const Family& f : kFamilies) out.emplace_back(f.class_name);
  return out;
}

std::unique_ptr<Pipeline> load_pipeline(const std::string& dir, const PipelineOptions& options) {
  const nlohmann::json index = pipeline::read_model_index(dir);
  const std::string source = dir + "/model_index.json";
  const nlohmann::json& cls = index.contains("_class_name") ? index.at("_class_name") : nlohmann::json();
  if (!cls.is_string()) throw UserError(source + ": '_class_name' is missing or not a string");
  for (const Family& f : kFamilies)
    if (cls.get<std::string>() == f.class_name) return f.make(dir, options);
  std::string known;
  for (const Family& f : kFamilies) known += (known.empty() ? "" : ", ") + std::string(f.class_name);
  throw UserError(source + ": pipeline class '" + cls.get<std::string>() + "' is not supported; dattn runs " + known);
}

}  // namespace dattn
