// check_hv15_request and hv15_latent_shape: what a request must satisfy for the HunyuanVideo-1.5 model.
#include <string>

#include "dattn/pipeline/hunyuanvideo15/hv15_pipeline.h"
#include "pipeline/common/request_checks.h"

namespace dattn {

void check_hv15_request(const Hv15PipelineInfo& info, const GenerationRequest& r) {
  const std::string why = "the VAE's spatial factor " + std::to_string(info.vae.spatial_compression_ratio) +
                          " x the transformer's patch " + std::to_string(info.transformer.patch_size);
  pipeline::check_multiple("--height", r.height, info.spatial_multiple(), why);
  pipeline::check_multiple("--width", r.width, info.spatial_multiple(), why);
  pipeline::check_common_fields(r, info.vae.temporal_compression_ratio, info.num_train_timesteps);
  pipeline::check_initial_latents(r, hv15_latent_shape(info, r));
}

Shape hv15_latent_shape(const Hv15PipelineInfo& info, const GenerationRequest& r) {
  const std::int64_t s = info.vae.spatial_compression_ratio;
  return {1, info.vae.latent_channels, (r.num_frames - 1) / info.vae.temporal_compression_ratio + 1, r.height / s,
          r.width / s};
}

}  // namespace dattn
