// dattn transformer: one forward of a transformer checkpoint on inputs from a safetensors file, written
// to another, so any case (e.g. the golden ones) can be checked from outside.
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/attention/metrics.h"
#include "dattn/command.h"
#include "dattn/core/error.h"
#include "dattn/device_option.h"
#include "dattn/io/output_file.h"
#include "dattn/io/safetensors.h"
#include "dattn/io/safetensors_writer.h"
#include "dattn/io/weight_store.h"
#include "dattn/model_option.h"
#include "dattn/models/hunyuanvideo15/transformer.h"
#include "dattn/models/wan/transformer.h"
#include "dattn/ops/finite.h"
#include "dattn/run_dtype_option.h"

namespace dattn::tool {
namespace {

struct TransformerOptions {
  std::string model, revision, inputs, output, device = "auto", dtype = "auto";
};

// The output is a safetensors file whatever its name says: any other extension would mislabel it.
void check_transformer_output(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext != ".safetensors")
    throw UserError("--output '" + path + "': dattn transformer writes a .safetensors file (tensor output.sample), "
                    "got extension '" + ext + "'");
  create_parent_folders(path, "--output");
  check_output_file(path, "--output");
}

// A pipeline folder (model_index.json) holds its transformer in transformer/: take that one, so that
// --model takes the same folder or Hugging Face id as `dattn generate`.
std::string transformer_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(fs::path(dir) / "config.json", ec) && fs::exists(fs::path(dir) / "model_index.json", ec) &&
      fs::exists(fs::path(dir) / "transformer" / "config.json", ec)) {
    const std::string sub = (fs::path(dir) / "transformer").string();
    std::fprintf(stderr, "[dattn] --model: a pipeline folder; running its transformer, %s\n", sub.c_str());
    return sub;
  }
  return dir;
}

// A named input of the case file, NaN/Inf refused.
Tensor read_input(const SafetensorsFile& inputs, const std::string& path, const std::string& name, DType dtype,
                  const std::vector<std::string>& expected) {
  if (!inputs.contains(name)) {
    std::string list;
    for (const auto& e : expected) list += (list.empty() ? "" : ", ") + e;
    throw UserError(path + ": tensor '" + name + "' not found; this transformer expects " + list);
  }
  const Tensor t = tensor_from_safetensors(inputs, name, dtype);
  if (const ops::NonFinite bad = ops::count_nonfinite(t); bad.count)
    throw UserError(path + ": tensor '" + name + "' holds " + std::to_string(bad.count) + " NaN or Inf values");
  return t;
}

std::string class_of(const std::string& model_dir) {
  const nlohmann::json j = read_component_config(model_dir);
  return j.contains("_class_name") && j.at("_class_name").is_string() ? j.at("_class_name").get<std::string>()
                                                                      : "WanTransformer3DModel";
}

struct Forward {
  Tensor sample;
  double load_ms = 0, forward_ms = 0;
};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

Forward wan_forward(const std::string& dir, const SafetensorsFile& in, const std::string& path, const WanRunOptions& run) {
  const std::vector<std::string> names = {"input.hidden_states", "input.timestep", "input.encoder_hidden_states"};
  const Tensor hidden = read_input(in, path, names[0], DType::F32, names);
  const Tensor timestep = read_input(in, path, names[1], DType::F64, names);
  const Tensor text = read_input(in, path, names[2], DType::F32, names);
  Forward f;
  auto t = std::chrono::steady_clock::now();
  const WanTransformer model = WanTransformer::load(dir, run);
  f.load_ms = ms_since(t);
  t = std::chrono::steady_clock::now();
  f.sample = model.forward(hidden, timestep, text).to(Device::CPU).to(DType::F32);
  f.forward_ms = ms_since(t);
  return f;
}

// HunyuanVideo-1.5: the golden case's input names; input.image_embeds is optional (text to video).
Forward hv15_forward(const std::string& dir, const SafetensorsFile& in, const std::string& path,
                     const WanRunOptions& run) {
  const std::vector<std::string> names = {"input.hidden_states",        "input.timestep",
                                          "input.encoder_hidden_states", "input.encoder_attention_mask",
                                          "input.encoder_hidden_states_2", "input.encoder_attention_mask_2"};
  const Tensor hidden = read_input(in, path, names[0], DType::F32, names);
  const Tensor timestep = read_input(in, path, names[1], DType::F64, names);
  Hv15TextInputs text;
  text.encoder_hidden_states = read_input(in, path, names[2], DType::F32, names);
  text.encoder_attention_mask = read_input(in, path, names[3], DType::F32, names);
  text.encoder_hidden_states_2 = read_input(in, path, names[4], DType::F32, names);
  text.encoder_attention_mask_2 = read_input(in, path, names[5], DType::F32, names);
  if (in.contains("input.image_embeds"))
    text.image_embeds = read_input(in, path, "input.image_embeds", DType::F32, names);
  Forward f;
  auto t = std::chrono::steady_clock::now();
  const auto model = HunyuanVideo15Transformer::load(dir, {run.device, run.dtype, run.attention});
  f.load_ms = ms_since(t);
  t = std::chrono::steady_clock::now();
  f.sample = model.forward(hidden, timestep, text).to(Device::CPU).to(DType::F32);
  f.forward_ms = ms_since(t);
  return f;
}

int run_transformer(const TransformerOptions& o, const CommandContext& ctx) {
  WanRunOptions run;
  run.device = device_from_option(o.device);
  require_usable_device(run.device);
  run.dtype = run_dtype_from_option(o.dtype, run.device);
  run.attention = settings_from_command_line(ctx.attention_flags);
  const std::string model_dir = transformer_dir(model_dir_from_option(o.model, o.revision));
  check_transformer_output(o.output);
  refuse_output_over_input(o.output, "--output", o.inputs, "--inputs");
  refuse_output_in_model(o.output, "--output", model_dir);
  const std::string cls = class_of(model_dir);
  if (cls != "WanTransformer3DModel" && cls != "HunyuanVideo15Transformer3DModel")
    throw UserError(model_dir + "/config.json: '_class_name' is \"" + cls +
                    "\"; dattn transformer runs WanTransformer3DModel and HunyuanVideo15Transformer3DModel");
  const SafetensorsFile inputs(o.inputs);  // read before the model: a bad file fails fast
  const Forward f = cls == "WanTransformer3DModel" ? wan_forward(model_dir, inputs, o.inputs, run)
                                                   : hv15_forward(model_dir, inputs, o.inputs, run);
  const Tensor& sample = f.sample;
  if (const ops::NonFinite bad = ops::count_nonfinite(sample); bad.count)
    throw NumericError("the transformer forward produced " + std::to_string(bad.nan) + " NaN and " +
                       std::to_string(bad.count - bad.nan) + " Inf of " + std::to_string(sample.numel()) +
                       " output values from finite inputs; likely cause: weights with NaN, Inf or huge values (a "
                       "corrupt or mis-converted checkpoint) or activations overflowing --dtype. Nothing was written.");

  WrittenTensor out{"output.sample", "F32", sample.shape(), std::vector<std::uint8_t>(sample.bytes())};
  std::memcpy(out.bytes.data(), sample.data(), sample.bytes());
  write_safetensors(o.output, {out}, {{"format", "pt"}});
  std::printf("output.sample %s -> %s (load %.0f ms, forward %.1f ms, %s %s)\n", shape_str(sample.shape()).c_str(),
              o.output.c_str(), f.load_ms, f.forward_ms, std::string(device_name(run.device)).c_str(),
              std::string(dtype_name(run.dtype)).c_str());
  // A case file that carries the expected output (the golden ones do) is checked on the way.
  if (inputs.contains("output.sample") && inputs.info("output.sample").shape == sample.shape()) {
    const auto got = sample.to_f64_vector();
    const auto want = inputs.read_f64("output.sample");
    std::printf("vs output.sample in %s: %s\n", o.inputs.c_str(), describe(compare(got.data(), want.data(), got.size())).c_str());
  }
  return 0;
}

}  // namespace

Command add_transformer_command(CLI::App& root) {
  auto o = std::make_shared<TransformerOptions>();
  CLI::App* app = root.add_subcommand(
      "transformer", "Run one transformer forward on the inputs of a safetensors file and write output.sample "
                     "(float32). WanTransformer3DModel: input.hidden_states, input.timestep, "
                     "input.encoder_hidden_states. HunyuanVideo15Transformer3DModel: those and "
                     "input.encoder_attention_mask, input.encoder_hidden_states_2, input.encoder_attention_mask_2 "
                     "(input.image_embeds optional)");
  app->add_option("--model", o->model,
                  "The transformer directory (config.json + weights, single or sharded), a pipeline directory "
                  "(its transformer/ is run), or a Hugging Face id ORG/NAME in the local Hugging Face cache")
      ->required()->type_name("DIR|ORG/NAME");
  app->add_option("--revision", o->revision,
                  "With a Hugging Face id: the branch, tag (read from the cache's refs/) or commit hash; default main")
      ->type_name("REV");
  app->add_option("--inputs", o->inputs, "Safetensors file with the inputs")->required()->type_name("FILE");
  app->add_option("--output", o->output, "Safetensors file to write output.sample to")->required()
      ->type_name("FILE.safetensors");
  app->add_option("--device", o->device, "auto (cuda when a GPU is visible, else cpu), cpu or cuda")
      ->capture_default_str();
  app->add_option("--dtype", o->dtype,
                  "Run dtype: auto (bf16 on cuda, fp32 on cpu), fp32, bf16 or fp16 (weights are converted when loaded)")
      ->capture_default_str();
  document_attention_flags(*app);
  return {app, true, [o](const CommandContext& ctx) { return run_transformer(*o, ctx); }};
}

}  // namespace dattn::tool
