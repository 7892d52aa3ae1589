// dattn generate: text to video with a diffusers pipeline directory (the registry of load_pipeline picks
// the family), written as .mp4, .png or .safetensors. Every argument is checked before any weight is read.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/command.h"
#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "dattn/device_option.h"
#include "dattn/generate_report.h"
#include "dattn/generate_validation.h"
#include "dattn/integer_option.h"
#include "dattn/io/output_file.h"
#include "dattn/io/video_writer.h"
#include "dattn/model_option.h"
#include "dattn/parallel_option.h"
#include "dattn/pipeline/noise.h"
#include "dattn/pipeline/pipeline.h"
#include "dattn/run_dtype_option.h"
#include "dattn/seed_option.h"
#include "dattn/start_ranks.h"

namespace dattn::tool {
namespace {


struct GenerateOptions {
  std::string model, revision, prompt, negative_prompt, output, initial_latents, report;
  std::string device = "auto", dtype = "auto", vae_dtype = "auto", quantization = "none", guidance;
  std::string load_ahead = "auto";
  std::int64_t height = 0, width = 0, num_frames = 0;
  int steps = 0, fps = 16;
  std::uint64_t seed = 0;
  std::optional<double> guidance_scale;
  std::optional<double> flow_shift;
  std::string validate_against;            // a baseline backend: run the request again on it and compare
  std::string validate_quantization;       // the baseline's --quantization; empty: the run's own
  std::optional<double> validate_min_psnr;  // dB; below it the command exits with kValidationFailed
  std::optional<int> validate_warmup_steps;  // untimed steps per configuration before the timed pair (1)
  bool op_times = false;                    // the ops' time inside each stage group (StageTimer)
  ParallelFlags parallel;
};

LoadAhead load_ahead_from_option(const std::string& value) {
  if (value == "auto") return LoadAhead::Auto;
  if (value == "on") return LoadAhead::On;
  if (value == "off") return LoadAhead::Off;
  throw UserError("--load-ahead '" + value + "': expected auto, on or off");
}

// Exit status when --validate-min-psnr is not met (the output and report are written all the same).
constexpr int kValidationFailed = 3;

std::string mib(std::int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string stage_memory_text(const std::vector<StageMemory>& stages) {
  std::string out = "peak memory per stage:\n";
  for (const auto& m : stages) {
    out += "  " + m.stage + std::string(m.stage.size() < 18 ? 18 - m.stage.size() : 1, ' ') + "host " +
           (m.peak_host_bytes >= 0 ? mib(m.peak_host_bytes) : std::string("?"));
    if (m.peak_device_bytes >= 0) out += ", device " + mib(m.peak_device_bytes);
    out += "\n";
  }
  return out;
}

nlohmann::json stage_memory_json(const std::vector<StageMemory>& stages) {
  nlohmann::json out = nlohmann::json::array();
  auto bytes = [](std::int64_t b) { return b >= 0 ? nlohmann::json(b) : nlohmann::json(nullptr); };
  for (const auto& m : stages)
    out.push_back({{"stage", m.stage}, {"peak_host_bytes", bytes(m.peak_host_bytes)},
                   {"peak_device_bytes", bytes(m.peak_device_bytes)}});
  return out;
}

// One line per denoising step on stderr, so stdout keeps only the summary.
void print_progress(const char* tag, int i, int n, double t, double step_ms, double elapsed_ms) {
  const double eta_s = (elapsed_ms / (i + 1)) * (n - i - 1) / 1000.0;
  std::fprintf(stderr, "[%s] step %d/%d  t=%g  %.2f s/step  elapsed %.1f s  eta %.1f s\n", tag, i + 1, n, t,
               step_ms / 1000.0, elapsed_ms / 1000.0, eta_s);
}

// Runs the pipeline once, recording what a validation compares. `full`, when given, receives the whole
// result.
// `on_frames`: the observer's, to write the video while it decodes.
RunRecord run_recorded(Pipeline& pipeline, const GenerationRequest& request, const char* tag, bool keep_latents,
                       GenerationResult* full = nullptr, std::function<void(const Tensor&)> on_frames = {}) {
  RunRecord rec;
  double elapsed_ms = 0;
  ProgressObserver observer;
  observer.on_frames = std::move(on_frames);
  observer.on_step = [&](int i, int n, double t, const Tensor&, double step_ms) {
    elapsed_ms += step_ms;
    print_progress(tag, i, n, t, step_ms, elapsed_ms);
  };
  const auto start = std::chrono::steady_clock::now();
  GenerationResult result = pipeline.run(request, observer);
  rec.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (const auto& [stage, ms] : result.report.stage_ms)
    if (stage == "denoising") rec.dit_ms = ms;
  rec.step_ms = result.report.step_ms;
  rec.attention = result.report.attention;
  rec.quantization = quantization_name(pipeline.options().quantization);
  rec.frames = result.frames;
  if (keep_latents) rec.latents = result.final_latents.to_f64_vector();
  if (full) *full = std::move(result);
  return rec;
}

// Runs the request once per pipeline with `steps` denoising steps, untimed and discarded, so that
// neither timed run of a validation pays the process's one-time set-up (CUDA context, lazily loaded
// kernels, library handles, memory pools, a cold file cache). Measured on an H200 with the demo's small
// model, SAGE_ATTN then FLASH_ATTN: 1.52 s and 0.26 s end to end without it, 0.18 s and 0.16 s with it.
void warm_up(GenerationRequest request, int steps, std::initializer_list<Pipeline*> pipelines) {
  request.num_inference_steps = std::min(steps, request.num_inference_steps);
  std::fprintf(stderr, "[dattn] warm-up: %d step(s) with each of %zu configurations (untimed)\n",
               request.num_inference_steps, pipelines.size());
  for (Pipeline* p : pipelines) p->run(request);
}

int run_generate(const GenerateOptions& o, const CommandContext& ctx) {
  auto start = std::chrono::steady_clock::now();
  const auto ms_since = [](auto t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  // Everything the user gave is checked here, before any weight is read: building a PerStage pipeline
  // reads only its configs and resolves its attention roles.
  PipelineOptions options;
  options.device = device_from_option(o.device);
  require_usable_device(options.device);
  options.dtype = run_dtype_from_option(o.dtype, options.device);
  options.vae_dtype = vae_dtype_from_option(o.vae_dtype);
  options.quantization = quantization_from_option(o.quantization);
  const std::string model_dir = model_dir_from_option(o.model, o.revision);
  // An output never replaces what the run reads (compared as files, not as spellings).
  refuse_output_over_input(o.output, "--output", o.initial_latents, "--initial-latents");
  refuse_output_in_model(o.output, "--output", model_dir);
  if (!o.report.empty()) {
    refuse_output_over_input(o.report, "--report", o.initial_latents, "--initial-latents");
    refuse_output_in_model(o.report, "--report", model_dir);
  }
  options.attention = settings_from_command_line(ctx.attention_flags);
  options.residency = Residency::PerStage;  // one big component in memory at a time
  options.load_ahead = load_ahead_from_option(o.load_ahead);
  // Alone and asked for several ranks: become mpirun starting them on this host (returns when not).
  start_ranks_when_alone(o.parallel, options.device, ctx.arguments);
  // The ranks (mpirun's, or this process alone); every rank checks the same arguments the same way, so a
  // bad one fails on all of them before any work. Only rank 0 makes folders and writes files.
  RunRanks ranks = join_ranks(o.parallel, options.device);
  const bool root = ranks.world.rank() == 0;
  options.parallel = ranks.groups;
  options.device_index = ranks.device_index;
  options.guidance = run_guidance(o.parallel, guidance_from_option(o.guidance));
  if (ranks.world.size() > 1 && !o.validate_against.empty())
    throw UserError("--validate-against runs on one process: expected it without mpirun and parallel flags");
  std::unique_ptr<Pipeline> pipeline = load_pipeline(model_dir, options);
  GenerationRequest request;
  request.prompt = o.prompt;
  request.negative_prompt = o.negative_prompt;
  request.height = o.height;
  request.width = o.width;
  request.num_frames = o.num_frames;
  request.num_inference_steps = o.steps;
  request.guidance_scale = o.guidance_scale;
  request.seed = o.seed;
  request.flow_shift = o.flow_shift;
  if (!o.initial_latents.empty()) request.initial_latents = read_initial_latents(o.initial_latents);
  pipeline->check(request);
  VideoWriteOptions video;
  video.fps = o.fps;
  // 240 as serve's 'fps' (and its --default-fps): mp4 players balk at frame rates far above it.
  if (o.fps < 1 || o.fps > 240) throw UserError("--fps " + std::to_string(o.fps) + " must be from 1 to 240");
  video_format_for(o.output);  // a bad extension is refused before any folder is made
  check_frame_size(o.output, o.height, o.width);
  check_frame_paths(o.output, o.num_frames);
  if (o.validate_min_psnr && o.validate_against.empty())
    throw UserError("--validate-min-psnr needs --validate-against BACKEND (the run to compare with)");
  if (!o.validate_quantization.empty() && o.validate_against.empty())
    throw UserError("--validate-quantization needs --validate-against BACKEND (the run to compare with)");
  if (o.validate_warmup_steps && o.validate_against.empty())
    throw UserError("--validate-warmup-steps needs --validate-against BACKEND (the run to compare with)");
  if (o.validate_min_psnr && std::isnan(*o.validate_min_psnr))
    throw UserError("--validate-min-psnr nan: expected a number of dB");
  if (!o.report.empty() && same_file(o.report, o.output))
    throw UserError("--report '" + o.report + "' is the --output file; give the report a path of its own");
  const int warmup_steps = o.validate_warmup_steps.value_or(1);
  const Quantization baseline_quantization =
      o.validate_quantization.empty() ? options.quantization
                                      : quantization_from_option(o.validate_quantization, "--validate-quantization");
  // The folders are made as `mkdir -p` would once the request is known to be good, then checked: the
  // report is written last, and a run must not end in "cannot write".
  if (root) {
    create_parent_folders(o.output, "output");
    check_output_path(o.output, video);
  }
  // A report to a stream (/dev/stdout, a FIFO, /dev/null) is written there as it is; a file is replaced.
  if (root && !o.report.empty() && output_place(o.report, "--report", /*stream_ok=*/true) == OutputPlace::File) {
    create_parent_folders(o.report, "--report");
    check_output_file(o.report, "--report");
  }
  const bool validate = !o.validate_against.empty();
  // The baseline is a second pipeline of the same model with every role on the baseline backend.
  std::unique_ptr<Pipeline> baseline;
  if (validate) {
    PipelineOptions base_options = options;
    base_options.attention = baseline_settings(o.validate_against, options.attention);
    base_options.quantization = baseline_quantization;
    baseline = load_pipeline(model_dir, base_options);
  }
  if (validate && warmup_steps > 0) {
    warm_up(request, warmup_steps, {pipeline.get(), baseline.get()});
    start = std::chrono::steady_clock::now();  // the report's total is the timed run's
  }

  // What the process did before the run (the CUDA context, configs, the pipeline's objects; no weights):
  // the first row of the stage times, so that they add up to the total.
  const double startup_ms = ms_since(start);
  if (o.op_times) StageTimer::enable(options.device);  // after the warm-up: the timed run's ops only
  GenerationResult result;
  // Rank 0 encodes the frames as the VAE hands them over; what is left after the run is "writing". A run
  // that fails leaves no file (the writer's temporary is removed).
  std::optional<VideoStreamWriter> writer;
  if (root) writer.emplace(o.output, o.num_frames, o.height, o.width, video);
  RunRecord record = run_recorded(*pipeline, request, "dattn", validate, &result,
                                  writer ? [&](const Tensor& frames) { writer->add(frames); }
                                         : std::function<void(const Tensor&)>{});
  if (o.op_times) StageTimer::disable();
  std::vector<std::pair<std::string, double>>& stage_ms = result.report.stage_ms;
  stage_ms.insert(stage_ms.begin(), {"start-up", startup_ms});
  const std::vector<StageMemory>& stage_memory = result.report.stage_memory;
  // Every rank ends with the same frames (the same latents, decoded by the same VAE): rank 0 writes them.
  if (!root) return 0;

  const auto write_start = std::chrono::steady_clock::now();
  GenerateReport report;
  report.files = writer->finish();
  stage_ms.emplace_back("writing", ms_since(write_start));

  report.model = o.model;
  report.output = o.output;
  report.device = std::string(device_name(options.device));
  report.dtype = std::string(dtype_name(options.dtype));
  if (options.quantization == Quantization::Fp8) report.dtype += " (fp8 linears)";
  report.frames = result.frames.dim(0);
  report.height = result.frames.dim(1);
  report.width = result.frames.dim(2);
  report.fps = o.fps;
  report.steps = o.steps;
  report.guidance_scale = result.report.guidance_scale;
  report.seed = o.seed;
  report.seeded_noise = o.initial_latents.empty();
  report.attention = result.report.attention;
  report.guidance = std::string(guidance_mode_name(result.report.guidance));
  report.stage_ms = stage_ms;
  report.loaded_ahead_ms = result.report.loaded_ahead_ms;
  report.op_ms = result.report.op_ms;
  report.median_step_ms = median_step_ms(record);
  report.total_ms = ms_since(start);
  report.peak_host_bytes = host_peak_rss_bytes();
  // Peak memory per stage group (host VmHWM reset between stages; device: dattn tensors on CUDA).
  for (const auto& m : stage_memory)
    if (m.peak_host_bytes > report.peak_host_bytes) report.peak_host_bytes = m.peak_host_bytes;
  std::fputs(summary_text(report).c_str(), stdout);
  std::fputs(stage_memory_text(stage_memory).c_str(), stdout);
  std::optional<ValidationResult> validation;
  if (validate) {
    RunRecord base = run_recorded(*baseline, request, "dattn baseline", true);
    validation = compare_runs(baseline->options().attention.config.default_spec->backend, std::move(record),
                              std::move(base));
    validation->warmup_steps = std::min(warmup_steps, o.steps);
    std::fputs(validation_text(*validation).c_str(), stdout);
  }
  if (!o.report.empty()) {
    nlohmann::json j = summary_json(report);
    if (validation) j["validation"] = validation_json(*validation);
    j["stage_memory"] = stage_memory_json(stage_memory);
    const parallel::ParallelDegrees& d = options.parallel.degrees;
    j["parallel"] = {{"ranks", ranks.world.size()}, {"transport", std::string(ranks.world.communicator()->transport())},
                     {"tensor_parallel_size", d.tensor_parallel}, {"ulysses_degree", d.ulysses},
                     {"cfg_parallel_size", d.cfg}};
    std::int64_t device_peak = -1;
    for (const auto& m : stage_memory) device_peak = std::max(device_peak, m.peak_device_bytes);
    j["peak_device_bytes"] = device_peak >= 0 ? nlohmann::json(device_peak) : nlohmann::json(nullptr);
    write_output_text(o.report, "--report", j.dump(2) + "\n");
  }
  if (validation && o.validate_min_psnr && !(validation->psnr_db >= *o.validate_min_psnr)) {
    std::fprintf(stderr, "dattn: validation failed: video PSNR %.2f dB against %s is below --validate-min-psnr %g\n",
                 validation->psnr_db, validation->baseline.c_str(), *o.validate_min_psnr);
    return kValidationFailed;
  }
  return 0;
}

}  // namespace

Command add_generate_command(CLI::App& root) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* app = root.add_subcommand(
      "generate", "Text to video with a diffusers pipeline directory (WanPipeline or HunyuanVideo15Pipeline); writes .mp4, .png or "
                  ".safetensors by the output's extension");
  app->add_option("--model", o->model,
                  "The pipeline directory (model_index.json, transformer/, vae/, ...), or a Hugging Face id "
                  "ORG/NAME in the local Hugging Face cache (HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub)")
      ->required()->type_name("DIR|ORG/NAME");
  app->add_option("--revision", o->revision,
                  "With a Hugging Face id: the branch, tag (read from the cache's refs/) or commit hash; default main")
      ->type_name("REV");
  app->add_option("--prompt", o->prompt, "What to generate")->required()->type_name("TEXT");
  app->add_option("--negative-prompt", o->negative_prompt, "What to steer away from (with guidance > 1)")
      ->type_name("TEXT");
  add_integer_option(*app, "--height", o->height, "Video height in pixels (a multiple of the model's factor, 32 for Wan2.2)")
      ->required();
  add_integer_option(*app, "--width", o->width, "Video width in pixels (a multiple of the model's factor)")->required();
  add_integer_option(*app, "--num-frames", o->num_frames, "Number of frames, 4k+1")->required();
  add_integer_option(*app, "--num-inference-steps", o->steps, "Denoising steps")->required();
  add_seed_option(*app, o->seed, "Seed of dattn's initial noise (not torch's generator), 0 to 2^64-1");
  app->add_option("--guidance-scale", o->guidance_scale,
                  "Classifier-free guidance scale, 0 to 100 (off at <= 1; default: the model's, 5 for Wan2.2, the "
                  "guider config's for HunyuanVideo-1.5)");
  app->add_option("--flow-shift", o->flow_shift, "Overrides the scheduler config's flow_shift (0.01 to 100)");
  add_integer_option(*app, "--fps", o->fps, "Frame rate of the .mp4, 1 to 240")->capture_default_str();
  app->add_option("--output", o->output, "PATH.mp4, PATH.png or PATH.safetensors")->required()->type_name("PATH");
  app->add_option("--initial-latents", o->initial_latents,
                  "Safetensors file with the initial noise (tensor input.latents or latents) instead of --seed")
      ->type_name("FILE");
  app->add_option("--device", o->device,
                  "auto (cuda when a GPU is visible, else cpu), cpu or cuda: where the text encoder and the "
                  "transformer run")
      ->capture_default_str();
  app->add_option("--dtype", o->dtype, "Transformer dtype: auto (bf16 on cuda, fp32 on cpu), fp32, bf16 or fp16")
      ->capture_default_str();
  app->add_option("--vae-dtype", o->vae_dtype,
                  "VAE decoder activations: auto (bf16 when the run is bf16 on cuda, else fp32), fp32 or bf16 "
                  "(cuda only)")
      ->capture_default_str();
  app->add_option("--quantization", o->quantization, kQuantizationHelp)->capture_default_str();
  app->add_option("--guidance", o->guidance,
                  "Classifier-free guidance strategy: batched (conditional and unconditional as one batch-2 "
                  "forward), sequential (two forwards) or cfg-parallel (one per rank, with --cfg-parallel-size 2); "
                  "default: the model's choice (Wan: sequential), cfg-parallel with --cfg-parallel-size 2")
      ->type_name("MODE");
  add_parallel_options(*app, o->parallel);
  app->add_option("--load-ahead", o->load_ahead,
                  "auto, on or off: load the transformer while the text encoder runs, and the VAE during denoising, "
                  "when the device's free memory holds both (auto: on cuda, one process; on: also on the cpu; "
                  "off: each component when its stage starts)")
      ->capture_default_str();
  app->add_flag("--op-times", o->op_times,
                "Also report the time of the ops (gemm, attention, conv, norms...) inside each stage, timed with "
                "CUDA events on the run's stream; the stage's wall time less their sum is host work and waiting. "
                "Adds a little overhead per op");
  const auto not_empty = [](const std::string& s) { return s.empty() ? std::string("expected a non-empty value") : ""; };
  app->add_option("--report", o->report, "Also write the summary as JSON")->type_name("FILE.json")->check(not_empty);
  app->add_option("--validate-against", o->validate_against,
                  "Run the same request again with every attention role on this backend (e.g. FLASH_ATTN) and "
                  "compare: end-to-end, DiT-stage and median step time, video PSNR, latents rel L2")
      ->type_name("BACKEND")
      ->check(not_empty);
  app->add_option("--validate-min-psnr", o->validate_min_psnr,
                  "With --validate-against: exit with status 3 when the video PSNR is below this (dB); the "
                  "output and report are still written")
      ->type_name("DB");
  app->add_option("--validate-quantization", o->validate_quantization,
                  "With --validate-against: the baseline's --quantization (none or fp8; default: this run's), "
                  "e.g. none to measure what --quantization fp8 costs in quality against the bf16 linears")
      ->type_name("Q");
  add_integer_option(*app, "--validate-warmup-steps", o->validate_warmup_steps,
                  "With --validate-against: first run each configuration untimed with this many steps, so that "
                  "neither timed run pays one-time set-up (default 1; 0: no warm-up)")
      ->check(CLI::Range(0, 1000));
  document_attention_flags(*app);
  return {app, true, [o](const CommandContext& ctx) { return run_generate(*o, ctx); }};
}

}  // namespace dattn::tool
