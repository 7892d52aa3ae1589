// dattn serve: the model loaded once, behind an OpenAI / vLLM-Omni style HTTP API (src/serve; README,
// "Serving"). This file only reads the command line, as `dattn generate` does, and runs the server
// until SIGTERM or SIGINT.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "dattn/command.h"
#include "dattn/core/error.h"
#include "dattn/device_option.h"
#include "dattn/integer_option.h"
#include "dattn/parallel_option.h"
#include "dattn/model_option.h"
#include "dattn/pipeline/pipeline.h"
#include "dattn/run_dtype_option.h"
#include "dattn/start_ranks.h"
#include "dattn/serve/rank_relay.h"
#include "dattn/serve/server.h"
#include "dattn/serve/video_files.h"

namespace dattn::tool {
namespace {

struct ServeCommandOptions {
  std::string model, revision, served_model_name, device = "auto", dtype = "auto", vae_dtype = "auto",
      quantization = "none", guidance, video_format = "mp4";
  std::optional<std::string> api_key;  // given: checked (an empty one turned authentication off)
  serve::ServeOptions serve;
  ParallelFlags parallel;
};

// Signals reach sigwait only: blocked before any thread starts, so none of them takes one.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// `--api-key "$KEY"` with KEY unset served without authentication; a key a client cannot send in a header
// (a space or a control character) would let no one in.
std::string api_key_from_option(const std::string& key) {
  if (key.empty())
    throw UserError("--api-key is empty (an unset shell variable?): give the key clients must send, or leave "
                    "--api-key out to serve without one");
  for (const char c : key)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      throw UserError("--api-key holds a space or a control character, which \"Authorization: Bearer KEY\" cannot "
                      "carry: give a key of visible characters");
  return key;
}

int run_serve(ServeCommandOptions o, const CommandContext& ctx) {
  // The options are checked as `dattn generate` checks them, before the port is taken.
  if (o.api_key) o.serve.api_key = api_key_from_option(*o.api_key);
  PipelineOptions options;
  options.device = device_from_option(o.device);
  require_usable_device(options.device);
  options.dtype = run_dtype_from_option(o.dtype, options.device);
  options.vae_dtype = vae_dtype_from_option(o.vae_dtype);
  options.quantization = quantization_from_option(o.quantization);
  options.attention = settings_from_command_line(ctx.attention_flags);
  options.residency = Residency::Resident;  // loaded once, for every request
  const auto format = serve::parse_video_format(o.video_format);
  if (!format) throw UserError("--video-format '" + o.video_format + "': expected mp4 or safetensors");
  o.serve.video_format = *format;
  const std::optional<GuidanceMode> guidance = guidance_from_option(o.guidance);
  if (guidance == GuidanceMode::CfgParallel && o.parallel.degrees.cfg != 2)
    throw UserError("--guidance cfg-parallel needs --cfg-parallel-size 2: expected sequential or batched, or "
                    "--cfg-parallel-size 2");
  const std::string model_dir = model_dir_from_option(o.model, o.revision);
  o.serve.model = !o.served_model_name.empty() ? o.served_model_name
                                              : std::filesystem::path(o.model).lexically_normal().filename().string();
  if (o.serve.model.empty()) o.serve.model = o.model;

  // Alone and asked for several ranks: become mpirun starting them on this host (docs/parallel.md).
  start_ranks_when_alone(o.parallel, options.device, ctx.arguments);
  // After the exec (mpirun must keep taking them), before MPI starts its threads.
  sigset_t signals = block_stop_signals();
  RunRanks ranks = join_ranks(o.parallel, options.device);
  options.parallel = ranks.groups;
  options.device_index = ranks.device_index;
  options.guidance = run_guidance(o.parallel, guidance);
  const std::shared_ptr<parallel::Communicator> world = ranks.world.communicator();

  if (world->rank() != 0) {  // runs what rank 0 sends until it stops; rank 0 alone answers SIGTERM
    const std::unique_ptr<Pipeline> pipeline = load_pipeline(model_dir, options);
    world->barrier();  // loaded: rank 0 may say ready
    serve::follow_runs(*pipeline, *world);
    return 0;
  }
  // OpenMPI's mpirun ends every rank on SIGTERM or SIGINT (SIGKILL soon after): only rank 0's own SIGTERM
  // fails the jobs and releases the other ranks in order.
  if (world->size() > 1)
    std::fprintf(stderr, "[dattn serve] %d ranks; rank 0 is pid %d: SIGTERM to it stops the server in order\n",
                 world->size(), static_cast<int>(getpid()));
  serve::Server server(o.serve);
  server.start();
  server.load([&]() -> std::unique_ptr<Pipeline> {
    auto pipeline = load_pipeline(model_dir, options);
    if (world->size() == 1) return pipeline;
    world->barrier();  // /health says ready once every rank has loaded (a rank that fails ends them all)
    return std::make_unique<serve::RelayedPipeline>(std::move(pipeline), world);
  });
  int received = 0;
  sigwait(&signals, &received);
  std::fprintf(stderr, "[dattn serve] %s: stopping (the running job is cancelled and marked failed)\n",
               received == SIGTERM ? "SIGTERM" : "SIGINT");
  server.shutdown();
  if (world->size() > 1) serve::release_followers(*world);
  return 0;
}

}  // namespace

Command add_serve_command(CLI::App& root) {
  auto o = std::make_shared<ServeCommandOptions>();
  serve::ServeOptions& s = o->serve;
  CLI::App* app = root.add_subcommand(
      "serve", "An OpenAI-style HTTP server (POST /v1/videos, /v1/images/generations, ...) over one loaded "
               "pipeline: jobs queued FIFO, one at a time, kept in a SQLite store under --output-dir");
  app->add_option("model", o->model, "The pipeline directory, or a Hugging Face id ORG/NAME in the local cache")
      ->required()->type_name("MODEL_DIR");
  app->add_option("--revision", o->revision, "With a Hugging Face id: the branch, tag or commit")->type_name("REV");
  app->add_option("--served-model-name", o->served_model_name, "The model id clients send (default: the folder's name)");
  app->add_option("--host", s.host, "Address to listen on (0.0.0.0: every interface)")->capture_default_str();
  add_integer_option(*app, "--port", s.port, "TCP port (0: any free one, printed in the listening line once ready)")->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app->add_option("--api-key", o->api_key, "Require \"Authorization: Bearer KEY\" on /v1/*")->type_name("KEY");
  add_integer_option(*app, "--max-queue", s.max_queue, "Jobs that may wait; more are refused with 429")->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app->add_option("--output-dir", s.output_dir, "Where jobs.sqlite and videos/ live")->capture_default_str();
  app->add_option("--video-format", o->video_format,
                  "What /v1/videos answers with: mp4 (H.264, video/mp4; needs FFmpeg) or safetensors (the float "
                  "frames `dattn generate --output x.safetensors` writes, application/octet-stream)")
      ->capture_default_str()->type_name("mp4|safetensors");
  app->add_option("--device", o->device, "auto, cpu or cuda")->capture_default_str();
  app->add_option("--dtype", o->dtype, "Transformer dtype: auto, fp32, bf16 or fp16")->capture_default_str();
  app->add_option("--vae-dtype", o->vae_dtype,
                  "VAE decoder activations: auto (bf16 when the run is bf16 on cuda, else fp32), fp32 or bf16 "
                  "(cuda only)")
      ->capture_default_str();
  app->add_option("--quantization", o->quantization, kQuantizationHelp)->capture_default_str();
  app->add_option("--guidance", o->guidance,
                  "Classifier-free guidance strategy: batched, sequential, or cfg-parallel (implied by "
                  "--cfg-parallel-size 2)")
      ->type_name("MODE");
  add_parallel_options(*app, o->parallel);
  const char* limits = "Request limits (refused with 400 before queueing)";
  add_integer_option(*app, "--max-width", s.limits.max_width)->group(limits)->capture_default_str()->check(CLI::Range(1, 16384));
  add_integer_option(*app, "--max-height", s.limits.max_height)->group(limits)->capture_default_str()->check(CLI::Range(1, 16384));
  add_integer_option(*app, "--max-frames", s.limits.max_frames)->group(limits)->capture_default_str()->check(CLI::Range(1, 100000));
  add_integer_option(*app, "--max-steps", s.limits.max_steps)->group(limits)->capture_default_str()->check(CLI::Range(1, 10000));
  add_integer_option(*app, "--max-images", s.limits.max_images, "n of one image request")->group(limits)
      ->capture_default_str()->check(CLI::Range(1, 100));
  add_integer_option(*app, "--max-prompt-chars", s.limits.max_prompt_chars, "Bytes of a prompt")->group(limits)
      ->capture_default_str()->check(CLI::Range(1, 1 << 24));
  add_integer_option(*app, "--max-body-bytes", s.limits.max_body_bytes, "A larger body is refused with 413")->group(limits)
      ->capture_default_str()->check(CLI::Range(1, 1 << 30));
  add_integer_option(*app, "--request-read-timeout", s.request_read_timeout_s,
                     "Seconds a request's headers and body may take to arrive, in all; then 408 and the connection "
                     "is closed (a client trickling bytes held an HTTP thread for ever)")
      ->group(limits)->capture_default_str()->check(CLI::Range(1, 3600));
  const char* defaults = "Defaults of fields a request leaves out";
  add_integer_option(*app, "--default-width", s.defaults.width)->group(defaults)->capture_default_str()->check(CLI::Range(1, 16384));
  add_integer_option(*app, "--default-height", s.defaults.height)->group(defaults)->capture_default_str()->check(CLI::Range(1, 16384));
  add_integer_option(*app, "--default-num-frames", s.defaults.num_frames)->group(defaults)->capture_default_str()->check(CLI::Range(1, 100000));
  add_integer_option(*app, "--default-steps", s.defaults.num_inference_steps)->group(defaults)->capture_default_str()->check(CLI::Range(1, 10000));
  add_integer_option(*app, "--default-fps", s.defaults.fps)->group(defaults)->capture_default_str()->check(CLI::Range(1, 240));
  document_attention_flags(*app);
  return {app, true, [o](const CommandContext& ctx) { return run_serve(*o, ctx); }};
}

}  // namespace dattn::tool
