// dattn_wan_forward_bench: one Wan transformer forward at full size (a checkpoint made with
// `dattn make-checkpoint`), timed with CUDA events after warm-up (median), split into stages with
// StageTimer (attention, gemm, the rest), with peak device memory. The PyTorch baseline is
// bench/wan_forward_torch.py, run in the same command by scripts/bench-wan-forward.sh.
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
#include "dattn/core/stage_timer.h"
#include "dattn/models/quantization.h"
#include "dattn/models/random_checkpoint.h"
#include "dattn/models/wan/transformer.h"
#include "forward_timing.h"

namespace {

using namespace dattn;

int run(int argc, char** argv) {
  CLI::App app{"Time one Wan transformer forward at full size (see bench/wan_forward_torch.py for the baseline)"};
  std::string model, dtype_name_ = "bf16", backend, json_path, quantization = "none";
  int frames = 13, height = 44, width = 80, text = 512, warmup = 2, iters = 5;
  std::int64_t batch = 1;
  bool per_token = false;
  std::string make_config;
  app.add_option("--model", model, "transformer directory (dattn make-checkpoint --config ...)")->required();
  app.add_option("--make-checkpoint", make_config,
                 "CONFIG.json: first write --model with random bf16 weights, as `dattn make-checkpoint` does "
                 "(for machines where only this binary runs)");
  app.add_option("--dtype", dtype_name_, "bf16, fp16 or fp32")->capture_default_str();
  app.add_option("--frames", frames, "latent frames")->capture_default_str();
  app.add_option("--latent-height", height, "latent height")->capture_default_str();
  app.add_option("--latent-width", width, "latent width")->capture_default_str();
  app.add_option("--text", text, "text tokens")->capture_default_str();
  app.add_option("--batch", batch, "batch size (2: a batched classifier-free guidance forward)")->capture_default_str();
  app.add_option("--timestep-per-token", per_token,
                 "one timestep per latent token, as the Wan2.2 TI2V pipeline passes it (else one per batch)")
      ->capture_default_str();
  app.add_option("--warmup", warmup)->capture_default_str();
  app.add_option("--iters", iters)->capture_default_str();
  app.add_option("--backend", backend, "attention backend for every role (default: the platform default)");
  app.add_option("--quantization", quantization,
                 "fp8: the blocks' attention and FFN linears in FP8 e4m3 (as dattn generate --quantization fp8)")
      ->capture_default_str();
  app.add_option("--json", json_path, "also write the results here");
  CLI11_PARSE(app, argc, argv);

  bench::make_checkpoint_if_asked(make_config, model);
  WanRunOptions options;
  options.device = Device::CUDA;
  const bench::RunFlags flags = bench::run_flags(dtype_name_, backend);
  options.dtype = flags.dtype;
  options.attention = flags.attention;
  const auto q = parse_quantization(quantization);
  if (!q) throw UserError("--quantization '" + quantization + "': expected fp8 or none");
  options.quantization = *q;

  const auto load0 = std::chrono::steady_clock::now();
  const WanTransformer m = WanTransformer::load(model, options);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - load0).count();
  const std::size_t weights = device_bytes_in_use();
  const auto& cfg = m.config();
  const Tensor hidden =
      bench::gaussian({batch, cfg.in_channels, frames, height, width}, 1).to(options.dtype).to(Device::CUDA);
  const std::int64_t tokens = (frames / cfg.patch_size[0]) * (height / cfg.patch_size[1]) * (width / cfg.patch_size[2]);
  const Tensor timestep = per_token ? Tensor::from_f32(std::vector<float>(batch * tokens, 500.f), {batch, tokens})
                                    : Tensor::from_f32({500.f}, {1});
  const Tensor ctx = bench::gaussian({batch, text, cfg.text_dim}, 2).to(options.dtype).to(Device::CUDA);

  reset_device_peak();
  const bench::ForwardTiming t = bench::time_forward([&] { (void)m.forward(hidden, timestep, ctx); }, warmup, iters);
  nlohmann::json res = bench::timing_json(t, weights);
  res.update({{"tokens", tokens},
              {"batch", batch},
              {"timestep_per_token", per_token},
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

int main(int argc, char** argv) { return dattn::bench::guarded_main("dattn_wan_forward_bench", run, argc, argv); }
