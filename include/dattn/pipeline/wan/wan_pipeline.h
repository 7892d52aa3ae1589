#pragma once
// The Wan family's pipeline (diffusers WanPipeline: Wan2.1 T2V, Wan2.2 TI2V used as T2V): prompt ->
// umT5 embeddings -> the shared denoise loop (WanTransformer as the Denoiser, classifier-free guidance,
// a flow-matching scheduler) -> de-normalised latents -> Wan VAE decode -> frames [F, H, W, 3] in [0, 1].
// load_pipeline() builds it for model_index.json's "WanPipeline"; the functions here are what it checks.
#include <cstdint>
#include <string>

#include "dattn/models/wan/config.h"
#include "dattn/models/wan_vae.h"
#include "dattn/pipeline/pipeline.h"

namespace dattn {

// What model_index.json and the component configs say, checked: every component present with the
// class this pipeline runs, and the components agreeing with each other (latent channels, text width).
struct WanPipelineInfo {
  std::string dir;
  std::string transformer_dir, vae_dir, text_encoder_dir, tokenizer_dir, scheduler_config;
  bool expand_timesteps = false;  // Wan2.2 TI2V: a timestep per latent token
  std::string scheduler_class;
  int num_train_timesteps = 1000;  // the scheduler's: the most denoising steps a request may ask
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

// The umT5 text length when a request gives none (diffusers' max_sequence_length default).
inline constexpr int kWanDefaultMaxSequenceLength = 512;

// Refuses, with a message saying what is expected: height or width not a positive multiple of the
// model's factor, num_frames not 4k+1 (the VAE's temporal factor), steps outside 1..num_train_timesteps,
// a guidance scale outside [0, kMaxGuidanceScale], a flow shift outside [kMinFlowShift, kMaxFlowShift], initial
// latents of the wrong shape.
void check_wan_request(const WanPipelineInfo& info, const GenerationRequest& request);

// [1, z_dim, (F - 1) / 4 + 1, H / 16, W / 16] for Wan2.2 (the VAE's factors).
Shape wan_latent_shape(const WanPipelineInfo& info, const GenerationRequest& request);

// The family's entry in the pipeline registry (src/pipeline/registry.cc).
std::unique_ptr<Pipeline> make_wan_pipeline(const std::string& dir, const PipelineOptions& options);

}  // namespace dattn
