// check_wan_request and wan_latent_shape: what a request must satisfy for the Wan model it runs on.
#include <string>

#include "dattn/core/error.h"
#include "dattn/pipeline/wan/wan_pipeline.h"
#include "pipeline/common/request_checks.h"

namespace dattn {

void check_wan_request(const WanPipelineInfo& info, const GenerationRequest& r) {
  const auto& patch = info.transformer.patch_size;
  const std::string spatial = "the VAE's spatial factor " + std::to_string(info.vae.scale_factor_spatial) +
                              " x the transformer's patch ";
  pipeline::check_multiple("--height", r.height, info.height_multiple(), spatial + std::to_string(patch[1]));
  pipeline::check_multiple("--width", r.width, info.width_multiple(), spatial + std::to_string(patch[2]));
  pipeline::check_common_fields(r, info.vae.scale_factor_temporal, info.num_train_timesteps);
  const std::int64_t ft = info.vae.scale_factor_temporal;
  const std::int64_t latent_frames = (r.num_frames - 1) / ft + 1;
  if (latent_frames % patch[0] != 0)
    throw UserError("--num-frames " + std::to_string(r.num_frames) + " gives " + std::to_string(latent_frames) +
                    " latent frames, not a multiple of the transformer's temporal patch " + std::to_string(patch[0]));
  pipeline::check_initial_latents(r, wan_latent_shape(info, r));
}

Shape wan_latent_shape(const WanPipelineInfo& info, const GenerationRequest& r) {
  const std::int64_t s = info.vae.scale_factor_spatial;
  return {1, info.vae.z_dim, (r.num_frames - 1) / info.vae.scale_factor_temporal + 1, r.height / s, r.width / s};
}

}  // namespace dattn
