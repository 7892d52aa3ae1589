#pragma once
// Text to video with a diffusers Wan pipeline directory (WanPipeline: Wan2.1 T2V, Wan2.2 TI2V used as
// T2V): prompt -> umT5 embeddings -> denoising with classifier-free guidance and a flow-matching
// scheduler -> de-normalised latents -> Wan VAE decode -> frames [F, H, W, 3] in [0, 1].
//
// Usage: inspect_wan_pipeline(dir) reads only the small JSON files, check_wan_t2v_request() refuses a
// bad request before any weight is read, then generate_wan_t2v() runs. Components are loaded when
// their stage starts and released when it ends (text encoder, then transformer, then VAE), so peak
// memory is the largest component plus activations, not their sum.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dattn/attention/config.h"
#include "dattn/attention/selector.h"
#include "dattn/core/tensor.h"
#include "dattn/models/wan/config.h"
#include "dattn/models/wan_vae.h"
#include "dattn/pipeline/scheduler.h"

namespace dattn {

// What model_index.json and the component configs say, checked: every component present with the
// class this pipeline runs, and the components agreeing with each other (latent channels, text width).
struct WanPipelineInfo {
  std::string dir;
  std::string transformer_dir, vae_dir, text_encoder_dir, tokenizer_dir, scheduler_config;
  bool expand_timesteps = false;  // Wan2.2 TI2V: a timestep per latent token
  std::string scheduler_class;
  WanTransformerConfig transformer;
  WanVaeConfig vae;
  std::int64_t text_dim = 0;  // the umT5 width (= transformer text_dim)

  // Height and width must be multiples of these: VAE spatial factor x transformer patch.
  std::int64_t height_multiple() const { return vae.scale_factor_spatial * transformer.patch_size[1]; }
  std::int64_t width_multiple() const { return vae.scale_factor_spatial * transformer.patch_size[2]; }
};

// Throws UserError naming the file and what is wrong: a missing directory or file, a pipeline class
// other than WanPipeline, a second transformer (Wan2.2 A14B's two-expert form is not supported yet),
// a component of an unsupported class, or configs that disagree.
WanPipelineInfo inspect_wan_pipeline(const std::string& dir);

struct WanT2VRequest {
  std::string prompt;
  std::string negative_prompt;  // "" as diffusers' default
  std::int64_t height = 0, width = 0, num_frames = 0;
  int num_inference_steps = 0;
  double guidance_scale = 5.0;  // classifier-free guidance runs when > 1, as in diffusers
  std::uint64_t seed = 0;
  std::optional<double> flow_shift;  // overrides the scheduler config's flow_shift / shift
  int max_sequence_length = 512;
  // Initial noise [1, C, F', H', W'] (float, CPU); when undefined it is drawn from `seed`.
  Tensor initial_latents;
};

// Refuses, with a message saying what is expected: height or width not a positive multiple of the
// model's factor, num_frames not 4k+1 (the VAE's temporal factor), steps < 1, a non-finite or
// negative guidance scale, a flow shift <= 0, initial latents of the wrong shape.
void check_wan_t2v_request(const WanPipelineInfo& info, const WanT2VRequest& request);

// [1, z_dim, (F - 1) / 4 + 1, H / 16, W / 16] for Wan2.2 (the VAE's factors).
Shape wan_latent_shape(const WanPipelineInfo& info, const WanT2VRequest& request);

// dattn's own seeded Gaussian noise (not torch's generator, so a seed does not reproduce a diffusers
// video): std::mt19937_64(seed), two 53-bit uniforms per pair, Box-Muller (u1 in (0, 1]), values in
// row-major order, rounded to float32. Deterministic across platforms and compilers.
Tensor seeded_gaussian(const Shape& shape, std::uint64_t seed);

// `input.latents` or `latents` from a safetensors file, as a float32 host tensor. Throws UserError
// when neither is there.
Tensor read_initial_latents(const std::string& path);

struct WanRunSettings {
  Device device = Device::CPU;
  DType dtype = DType::F32;  // the transformer's; umT5 runs in bf16 for bf16, else fp32; the VAE in fp32
  AttentionSettings attention;
};

// What generate_wan_t2v reports while it runs (every member optional).
struct WanT2VObserver {
  // After the text encoder: prompt (and, with guidance, negative) embeddings [1, L, text_dim].
  std::function<void(const Tensor& prompt_embeds, const Tensor* negative_embeds)> on_text;
  // After each denoising step i (0-based) of n at timestep t: the latents (float32, CPU).
  std::function<void(int i, int n, double timestep, const Tensor& latents, double step_ms)> on_step;
};

// Peak memory of one stage group (its loading and running): "text encoder", "denoising", "vae decode".
struct StageMemory {
  std::string stage;
  std::int64_t peak_host_bytes = -1;    // VmHWM during the stage; -1 when unknown
  std::int64_t peak_device_bytes = -1;  // most device memory held by dattn tensors at once (CUDA runs only)
};

struct WanT2VResult {
  Tensor frames;  // [F, H, W, 3] float32 in [0, 1]
  // Milliseconds per stage, in order: "load text encoder", "text encoding", "load transformer",
  // "denoising", "load vae", "vae decode".
  std::vector<std::pair<std::string, double>> stage_ms;
  std::vector<Resolution> attention;  // the backend each attention role resolved to
  std::vector<StageMemory> stage_memory;  // one entry per stage group, in order
};

// Runs the pipeline; check_wan_t2v_request first (it is called again here). Throws UserError for bad
// inputs or weights, ConfigError for an attention configuration the model cannot run.
WanT2VResult generate_wan_t2v(const WanPipelineInfo& info, const WanT2VRequest& request,
                              const WanRunSettings& settings, const WanT2VObserver& observer = {});

}  // namespace dattn
