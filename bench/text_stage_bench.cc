// dattn_text_stage_bench: the Wan text stage (umT5 on the prompt, then on the negative prompt, as the
// pipeline runs it) repeated in one fresh process on CUDA, each run's wall time and its ops' times
// printed, so that the first run's extra cost shows where it goes. `dattn generate` measured the cold
// text stage at 240-430 ms and the same stage in a warm process at 40-44 ms (bench/results,
// 2026-12-04); this tells which first use makes the difference.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_main.h"
#include "dattn/attention/cuda_warmup.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/run_context.h"
#include "dattn/core/stage_timer.h"
#include "dattn/models/umt5.h"
#include "dattn/ops/cuda_libraries.h"
#include "dattn/ops/linear.h"
#include "dattn/pipeline/wan/prompt_embeds.h"
#include "dattn/pipeline/wan/wan_pipeline.h"
#include "dattn/text/prompt_clean.h"
#include "dattn/text/tokenizer.h"

namespace dattn::bench {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int run(int argc, char** argv) {
  CLI::App app{"Times the Wan text stage (umT5, prompt + negative prompt) run after run in one process on CUDA"};
  std::string model;
  int runs = 3, idle_ms = 0, top = 8;
  bool prepare = false;
  int probes = 0;
  app.add_option("--model", model, "a Wan pipeline folder (text_encoder/, tokenizer/)")->required();
  app.add_option("--runs", runs, "text stages in a row")->check(CLI::Range(1, 100));
  app.add_option("--idle-ms", idle_ms, "sleep before the first run (a load's time without GPU work)");
  app.add_option("--top", top, "ops printed per run, most time first");
  app.add_flag("--prepare-libraries", prepare, "make the CUDA libraries' state (and TORCH_SDPA's) before the first run, as the pipeline's thread does");
  app.add_option("--probe-gemms", probes,
                 "before the first run, time this many small bf16 linears of shapes the text stage does not use: a "
                 "first one much slower than the next says the first-use cost is once per process, not per shape");
  CLI11_PARSE(app, argc, argv);

  const WanPipelineInfo info = inspect_wan_pipeline(model);
  const auto context = RunContext::create(Device::CUDA, 0);
  const ContextScope bound(*context);
  auto t = std::chrono::steady_clock::now();
  const Umt5Encoder encoder = Umt5Encoder::load(info.text_encoder_dir, Umt5RunOptions{Device::CUDA, DType::BF16});
  const T5Tokenizer tokenizer = T5Tokenizer::load(info.tokenizer_dir);
  context->synchronize();
  std::printf("load: %.1f ms\n", ms_since(t));
  if (prepare) {
    t = std::chrono::steady_clock::now();
    ops::prepare_cuda_libraries();
    prepare_attention_cuda();
    std::printf("prepare_cuda_libraries + prepare_attention_cuda: %.1f ms\n", ms_since(t));
  }
  for (int i = 0; i < probes; ++i) {
    const std::int64_t n = 64 * (i + 1);
    const Tensor x = Tensor::zeros({8 * (i + 1), n}, DType::BF16, Device::CUDA);
    const Tensor w = Tensor::zeros({n, n}, DType::BF16, Device::CUDA);
    t = std::chrono::steady_clock::now();
    static_cast<void>(ops::linear(x, w));
    context->synchronize();
    std::printf("probe linear %lldx%lld -> %lld: %.2f ms\n", static_cast<long long>(x.dim(0)),
                static_cast<long long>(n), static_cast<long long>(n), ms_since(t));
  }
  if (idle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));

  const std::vector<std::string> prompts = {"A cat walks on the grass, realistic",
                                            "blurry, low quality, static, distorted, watermark"};
  for (int r = 0; r < runs; ++r) {
    StageTimer::enable(Device::CUDA);
    t = std::chrono::steady_clock::now();
    for (const std::string& p : prompts) {
      const Tensor e = encode_prompt(encoder, tokenizer.encode({clean_prompt(p)}, 512));
      const Tensor run_dtype = e.to(DType::BF16);  // as the pipeline hands it to the transformer
      static_cast<void>(run_dtype);
    }
    context->synchronize();
    const double wall = ms_since(t);
    const std::map<std::string, double> ops = StageTimer::collect();
    StageTimer::disable();
    std::vector<std::pair<double, std::string>> sorted;
    double sum = 0;
    for (const auto& [name, ms] : ops) {
      sorted.emplace_back(ms, name);
      sum += ms;
    }
    std::sort(sorted.rbegin(), sorted.rend());
    std::printf("run %d: %.1f ms wall, %.1f ms in %zu ops, device bytes in use %.0f MiB\n", r + 1, wall, sum,
                ops.size(), double(device_bytes_in_use()) / (1 << 20));
    for (int i = 0; i < top && i < static_cast<int>(sorted.size()); ++i)
      std::printf("    %-28s %8.2f ms\n", sorted[i].second.c_str(), sorted[i].first);
  }
  return 0;
}

}  // namespace
}  // namespace dattn::bench

int main(int argc, char** argv) { return dattn::bench::guarded_main("dattn_text_stage_bench", dattn::bench::run, argc, argv); }
