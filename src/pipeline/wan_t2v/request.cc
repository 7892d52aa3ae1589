// check_wan_t2v_request and wan_latent_shape: what a request must satisfy for the model it runs on.
// diffusers rounds a bad size or frame count down with a warning; dattn refuses it instead, so the
// video has the size that was asked for.
#include <cmath>
#include <string>

#include "dattn/core/error.h"
#include "dattn/pipeline/wan_t2v.h"

namespace dattn {
namespace {

void check_multiple(const char* flag, std::int64_t value, std::int64_t multiple, const std::string& why) {
  if (value < 1 || value % multiple != 0) {
    const std::int64_t below = value / multiple * multiple, above = below + multiple;
    std::string hint = below >= multiple ? "; try " + std::to_string(below) + " or " + std::to_string(above)
                                         : "; try " + std::to_string(above);
    throw UserError(std::string(flag) + " " + std::to_string(value) + " must be a positive multiple of " +
                    std::to_string(multiple) + " (" + why + ")" + hint);
  }
}

}  // namespace

void check_wan_t2v_request(const WanPipelineInfo& info, const WanT2VRequest& r) {
  const auto& patch = info.transformer.patch_size;
  const std::string spatial = "the VAE's spatial factor " + std::to_string(info.vae.scale_factor_spatial) +
                              " x the transformer's patch ";
  check_multiple("--height", r.height, info.height_multiple(), spatial + std::to_string(patch[1]));
  check_multiple("--width", r.width, info.width_multiple(), spatial + std::to_string(patch[2]));
  const std::int64_t ft = info.vae.scale_factor_temporal;
  if (r.num_frames < 1 || (r.num_frames - 1) % ft != 0) {
    const std::int64_t k = r.num_frames < 1 ? 0 : (r.num_frames - 1) / ft;
    throw UserError("--num-frames " + std::to_string(r.num_frames) + " must be " + std::to_string(ft) +
                    "k+1 (the VAE's temporal factor is " + std::to_string(ft) + "); try " + std::to_string(k * ft + 1) +
                    " or " + std::to_string((k + 1) * ft + 1));
  }
  const std::int64_t latent_frames = (r.num_frames - 1) / ft + 1;
  if (latent_frames % patch[0] != 0)
    throw UserError("--num-frames " + std::to_string(r.num_frames) + " gives " + std::to_string(latent_frames) +
                    " latent frames, not a multiple of the transformer's temporal patch " + std::to_string(patch[0]));
  if (r.num_inference_steps < 1)
    throw UserError("--num-inference-steps " + std::to_string(r.num_inference_steps) + " must be at least 1");
  if (!std::isfinite(r.guidance_scale) || r.guidance_scale < 0)
    throw UserError("--guidance-scale must be a finite number >= 0 (guidance runs when it is > 1)");
  if (r.flow_shift && !(std::isfinite(*r.flow_shift) && *r.flow_shift > 0))
    throw UserError("--flow-shift must be a positive number");
  if (r.max_sequence_length < 1) throw UserError("max_sequence_length must be at least 1");
  if (r.initial_latents.defined()) {
    const Shape want = wan_latent_shape(info, r);
    if (r.initial_latents.shape() != want)
      throw UserError("initial latents have shape " + shape_str(r.initial_latents.shape()) + ", expected " +
                      shape_str(want) + " for " + std::to_string(r.num_frames) + " frames of " +
                      std::to_string(r.height) + "x" + std::to_string(r.width));
  }
}

Shape wan_latent_shape(const WanPipelineInfo& info, const WanT2VRequest& r) {
  const std::int64_t s = info.vae.scale_factor_spatial;
  return {1, info.vae.z_dim, (r.num_frames - 1) / info.vae.scale_factor_temporal + 1, r.height / s, r.width / s};
}

}  // namespace dattn
