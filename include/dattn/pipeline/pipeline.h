#pragma once
// A loaded generation pipeline: built once from a diffusers pipeline directory (model_index.json's
// _class_name picks the family from the registry in src/pipeline/registry.cc), it runs as many requests
// as it is given. `dattn generate` and `dattn serve` use the same object.
//
//   auto pipeline = load_pipeline("Wan2.2-TI2V-5B-Diffusers", options);  // configs read, roles resolved
//   pipeline->check(request);                                            // UserError before any work
//   GenerationResult r = pipeline->run(request, observer);               // frames + report
//
// What stays in memory between requests is the options' Residency, not a side effect of each stage.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dattn/attention/config.h"
#include "dattn/attention/selector.h"
#include "dattn/core/run_context.h"
#include "dattn/core/tensor.h"
#include "dattn/models/denoiser.h"
#include "dattn/models/quantization.h"
#include "dattn/parallel/groups.h"
#include "dattn/pipeline/guidance.h"

namespace dattn {

// What a pipeline keeps loaded.
enum class Residency {
  // Each component is loaded when its stage starts and released when it ends, so one big component is
  // in memory at a time; every request reads the weights again (from the page cache). dattn generate.
  PerStage,
  // Every component is loaded when the pipeline is built and kept for every request: no load per
  // request, the sum of the components in memory. A server.
  Resident,
};

// Whether a PerStage pipeline loads a later stage's component while an earlier stage runs (on a thread
// and, on CUDA, a stream of its own), when the device's free memory holds both stages' estimates.
enum class LoadAhead {
  Auto,  // on CUDA runs of one process (the loads' copies overlap the GPU's work); never on the CPU
  On,    // also on the CPU (where loads and compute share the cores: for tests and measurements)
  Off,   // one component at a time, each loaded when its stage starts
};

struct PipelineOptions {
  Device device = Device::CPU;
  int device_index = 0;  // which GPU (CUDA); the pipeline's run context lives there
  DType dtype = DType::F32;  // the transformer's run dtype; each family documents its other components'
  AttentionSettings attention;
  Residency residency = Residency::PerStage;
  LoadAhead load_ahead = LoadAhead::Auto;  // PerStage only: a Resident pipeline loads everything once
  // Classifier-free guidance strategy; the family's measured-faster default when not given.
  std::optional<GuidanceMode> guidance;
  // The VAE decoder's activations (fp32, or bf16 on CUDA); when not given, pipeline_vae_dtype's rule.
  std::optional<DType> vae_dtype;
  // The run's ranks (docs/parallel.md): one process unless started by mpirun. With a CFG group of two,
  // guidance is CfgParallel; every rank runs the whole request (text encoding and VAE replicated) and
  // ends with the same latents and frames. Both families run tensor parallel and Ulysses groups of more
  // than one rank, alone or together.
  parallel::ParallelGroups parallel = parallel::single_process_groups();
  // FP8 linears in the transformer's blocks (docs/fp8.md). The text encoders and the VAE always run in
  // their own dtypes.
  Quantization quantization = Quantization::None;
};

// The dtype the pipeline's VAE decodes in: options.vae_dtype when given, else bf16 for a bf16 run on
// CUDA (bf16 activations, float32 accumulation: see WanVae::load) and fp32 otherwise (every CPU run, and
// fp32 or fp16 runs on CUDA). A UserError when the given one is not fp32 or bf16, or bf16 on the CPU.
DType pipeline_vae_dtype(const PipelineOptions& options);

struct GenerationRequest {
  std::string prompt;
  std::string negative_prompt;  // "" as diffusers' default
  std::int64_t height = 0, width = 0, num_frames = 0;
  int num_inference_steps = 0;
  // Classifier-free guidance runs when > 1, as in diffusers; the model's default when not given
  // (Pipeline::default_guidance_scale).
  std::optional<double> guidance_scale;
  std::uint64_t seed = 0;
  std::optional<double> flow_shift;  // overrides the scheduler config's flow_shift / shift
  std::optional<int> max_sequence_length;  // text tokens; the family's default when not given
  // Initial noise (float, any device) of the pipeline's latent shape; when undefined it is drawn from seed.
  Tensor initial_latents;
};

// What run() reports while it works (every member optional).
struct ProgressObserver {
  // After the text stage: the conditioning, and the unconditional one when guidance runs.
  std::function<void(const Conditioning& conditional, const Conditioning* unconditional)> on_conditioning;
  // After denoising step i (0-based) of n at timestep t: the latents (float32, on the run device; copy
  // them to read them) and the step's wall time (the device work finished).
  std::function<void(int i, int n, double timestep, const Tensor& latents, double step_ms)> on_step;
  // Asked before every step; true stops the run with RunCancelled.
  std::function<bool()> cancelled;
  // During the VAE decode: the next frames of the video, [n, H, W, 3] float32 in [0, 1] on the host, finite,
  // in order, as the VAE finishes them (a writer encodes them while the rest decodes; a VAE that does not
  // decode frame by frame hands over the whole video at the end). All of them together are the result's
  // frames, and share its memory: read them, do not change them.
  std::function<void(const Tensor& frames)> on_frames;
};

// Thrown by run() when the observer's `cancelled` said so.
class RunCancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Peak memory of one stage group (its loading and running): "text encoder", "denoising", "vae decode".
struct StageMemory {
  std::string stage;
  std::int64_t peak_host_bytes = -1;    // VmHWM during the stage; -1 when unknown
  std::int64_t peak_device_bytes = -1;  // most device memory held by dattn tensors at once (CUDA runs only)
};

struct GenerationReport {
  // Milliseconds per stage in order, e.g. "load text encoder", "text encoding", "load transformer",
  // "denoising", "load vae", "vae decode" (a Resident pipeline reports no load stages after it is built).
  std::vector<std::pair<std::string, double>> stage_ms;
  // Loads that ran beside other stages (LoadAhead), e.g. "load transformer", with their own duration; the
  // stage_ms entry of the same name is then only the time the next stage waited for it.
  std::vector<std::pair<std::string, double>> loaded_ahead_ms;
  std::vector<StageMemory> stage_memory;  // one entry per stage group, in order
  std::vector<Resolution> attention;      // the backend each attention role resolved to
  std::vector<double> step_ms;            // each denoising step's wall time
  GuidanceMode guidance = GuidanceMode::Sequential;
  double guidance_scale = 0;  // the scale the run used (the request's, or the model's default)
  // Milliseconds per op stage ("gemm", "attention", "conv", ...) inside each stage group, from the ops'
  // own StageScopes; filled only while StageTimer is enabled (`dattn generate --op-times`).
  std::vector<std::pair<std::string, std::map<std::string, double>>> op_ms;
};

struct GenerationResult {
  Tensor frames;  // [F, H, W, 3] float32 in [0, 1], on the host
  Tensor final_latents;  // [1, C, F', H', W'] float32 on the host, after the last step
  GenerationReport report;
};

class Pipeline {
 public:
  virtual ~Pipeline() = default;

  // The diffusers class this pipeline runs ("WanPipeline") and the directory it was built from.
  virtual const std::string& class_name() const = 0;
  virtual const std::string& model_dir() const = 0;
  virtual const PipelineOptions& options() const = 0;
  // The run context the pipeline's work runs on (its device, stream, library handles, memory counters);
  // run() binds it to the calling thread for the request.
  virtual RunContext& context() const = 0;
  // The backend each attention role resolved to when the pipeline was built.
  virtual std::vector<Resolution> attention() const = 0;

  // The guidance scale of a request that gives none: diffusers' default for the family (WanPipeline's
  // guidance_scale=5.0; HunyuanVideo-1.5's guider config's guidance_scale, 6.0 in the published one).
  virtual double default_guidance_scale() const = 0;
  // Refuses a request this model cannot run, with the flag and what is expected (size multiples,
  // frame counts, steps, guidance scale, flow shift, initial latents' shape), before any work.
  virtual void check(const GenerationRequest& request) const = 0;
  // The initial latents' shape for a request ([1, C, F', H', W']).
  virtual Shape latent_shape(const GenerationRequest& request) const = 0;
  // Runs one request (check() first). Throws UserError for bad inputs or weights, RunCancelled.
  virtual GenerationResult run(const GenerationRequest& request, const ProgressObserver& observer = {}) = 0;
};

// Builds the pipeline of a diffusers directory: reads model_index.json and the component configs (no
// weights unless options.residency is Resident) and resolves the attention roles, so a bad directory or
// an attention backend that cannot run the model fails here. UserError names the directory, the file and
// what is wrong; an unknown _class_name lists the registered ones.
std::unique_ptr<Pipeline> load_pipeline(const std::string& dir, const PipelineOptions& options);

// The pipeline classes this build can load ("WanPipeline", ...), in registry order.
std::vector<std::string> registered_pipeline_classes();

}  // namespace dattn
