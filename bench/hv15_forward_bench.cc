// dattn_hv15_forward_bench: one HunyuanVideo-1.5 transformer forward at full size (a checkpoint made
// with `dattn make-checkpoint`), timed with CUDA events after warm-up (median), split into stages
// (attention, GEMM, the rest), with peak device memory. The text inputs are padded as the pipeline pads
// them (1000 Qwen, 256 ByT5 tokens) with --qwen-valid / --byt5-valid valid ones. The PyTorch baseline is
// bench/hv15_forward_torch.py, run in the same command by scripts/bench-forward.sh --family hv15.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_main.h"
#include "dattn/attention/config.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/error.h"
#include "dattn/models/hunyuanvideo15/transformer.h"
#include "dattn/models/quantization.h"
#include "dattn/models/random_checkpoint.h"
#include "forward_timing.h"

namespace {

using namespace dattn;

Tensor prefix_mask(std::int64_t batch, std::int64_t length, std::int64_t valid) {
  std::vector<float> m(static_cast<std::size_t>(batch * length), 0.0f);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < valid; ++i) m[b * length + i] = 1.0f;
  return Tensor::from_f32(m, {batch, length});
}

int run(int argc, char** argv) {
  CLI::App app{"Time one HunyuanVideo-1.5 transformer forward at full size (bench/hv15_forward_torch.py: baseline)"};
  std::string model, dtype_name_ = "bf16", backend, json_path, make_config, quantization = "none";
  int frames = 9, height = 30, width = 52, qwen_valid = 128, byt5_valid = 16, warmup = 2, iters = 5;
  std::int64_t batch = 1;
  app.add_option("--model", model, "transformer directory (dattn make-checkpoint --config ...)")->required();
  app.add_option("--make-checkpoint", make_config, "CONFIG.json: first write --model with random bf16 weights");
  app.add_option("--dtype", dtype_name_, "bf16, fp16 or fp32")->capture_default_str();
  app.add_option("--frames", frames, "latent frames (33 video frames: 9)")->capture_default_str();
  app.add_option("--latent-height", height, "latent height (480: 30)")->capture_default_str();
  app.add_option("--latent-width", width, "latent width (832: 52)")->capture_default_str();
  app.add_option("--qwen-valid", qwen_valid, "valid Qwen tokens of the 1000")->capture_default_str();
  app.add_option("--byt5-valid", byt5_valid, "valid ByT5 tokens of the 256")->capture_default_str();
  app.add_option("--batch", batch, "batch size (2: a batched classifier-free guidance forward)")->capture_default_str();
  app.add_option("--warmup", warmup)->capture_default_str();
  app.add_option("--iters", iters)->capture_default_str();
  app.add_option("--backend", backend, "attention backend for every role (default: the platform default)");
  app.add_option("--quantization", quantization,
                 "fp8: the dual-stream blocks' attention and FFN linears in FP8 e4m3 (as dattn generate)")
      ->capture_default_str();
  app.add_option("--json", json_path, "also write the results here");
  CLI11_PARSE(app, argc, argv);

  bench::make_checkpoint_if_asked(make_config, model);
  Hv15RunOptions options;
  options.device = Device::CUDA;
  const bench::RunFlags flags = bench::run_flags(dtype_name_, backend);
  options.dtype = flags.dtype;
  options.attention = flags.attention;
  const auto q = parse_quantization(quantization);
  if (!q) throw UserError("--quantization '" + quantization + "': expected fp8 or none");
  options.quantization = *q;

  const auto load0 = std::chrono::steady_clock::now();
  const HunyuanVideo15Transformer m = HunyuanVideo15Transformer::load(model, options);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - load0).count();
  const std::size_t weights = device_bytes_in_use();
  const auto& cfg = m.config();
  const Tensor hidden =
      bench::gaussian({batch, cfg.in_channels, frames, height, width}, 1).to(options.dtype).to(Device::CUDA);
  Hv15TextInputs text;
  text.encoder_hidden_states =
      bench::gaussian({batch, 1000, cfg.text_embed_dim}, 2).to(options.dtype).to(Device::CUDA);
  text.encoder_attention_mask = prefix_mask(batch, 1000, qwen_valid);
  text.encoder_hidden_states_2 =
      bench::gaussian({batch, 256, cfg.text_embed_2_dim}, 3).to(options.dtype).to(Device::CUDA);
  text.encoder_attention_mask_2 = prefix_mask(batch, 256, byt5_valid);
  const Tensor timestep = Tensor::from_f32({500.f}, {1});

  reset_device_peak();
  const bench::ForwardTiming t = bench::time_forward([&] { (void)m.forward(hidden, timestep, text); }, warmup, iters);
  nlohmann::json res = bench::timing_json(t, weights);
  res.update({{"tokens", static_cast<std::int64_t>(frames) * height * width},
              {"qwen_valid", qwen_valid},
              {"byt5_valid", byt5_valid},
              {"batch", batch},
              {"dtype", dtype_name_},
              {"backend", backend.empty() ? "platform default" : backend},
              {"quantization", quantization},
              {"iters", iters},
              {"load_s", load_s}});
  std::printf("%s\n", res.dump().c_str());
  if (!json_path.empty()) std::ofstream(json_path) << res.dump(1) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return dattn::bench::guarded_main("dattn_hv15_forward_bench", run, argc, argv); }
