// A Wan request's memory lower bound per stage (see request_memory.h).
#include "pipeline/wan/request_memory.h"

#include <initializer_list>
#include <string>

#include "dattn/core/checked_math.h"
#include "dattn/core/error.h"
#include "dattn/models/wan/manifest.h"
#include "dattn/models/wan/tensor_parallel.h"

namespace dattn {
namespace {

constexpr std::string_view kWhat = "--height x --width x --num-frames (the memory estimate)";

std::int64_t mul(std::initializer_list<std::int64_t> factors) { return pipeline::checked_product(factors, kWhat); }

// One rank's weights: under tensor parallel only its slices of the blocks' split tensors.
std::int64_t transformer_weight_bytes(const WanTransformerConfig& config, DType dtype, int tensor_parallel) {
  std::int64_t sum = 0;
  for (const ParamSpec& p : wan_transformer_manifest(config)) {
    std::int64_t numel = shape_numel(p.shape);
    if (tensor_parallel > 1)
      if (const auto part = wan_tensor_parallel_slice(p.name, config, 0, tensor_parallel))
        numel = numel / p.shape[static_cast<std::size_t>(part->dim)] * part->length;
    sum = checked_add(sum, mul({numel, std::int64_t(p.keep_fp32 ? 4 : dtype_size(dtype))}), kWhat);
  }
  return sum;
}

std::int64_t vae_weight_bytes(const WanVaeConfig& config) {
  std::int64_t sum = 0;
  for (const auto& [name, shape] : wan_vae_decoder_tensors(config)) sum = checked_add(sum, mul({shape_numel(shape), 4}), kWhat);
  return sum;
}

}  // namespace

std::vector<pipeline::StageNeed> wan_request_memory(const WanPipelineInfo& info, const GenerationRequest& r,
                                                    const PipelineOptions& options) {
  const WanTransformerConfig& t = info.transformer;
  const WanVaeConfig& v = info.vae;
  const bool loaded = options.residency == Residency::Resident;  // weights are in memory already
  const bool cuda = options.device == Device::CUDA;
  const Shape latent = wan_latent_shape(info, r);
  const std::int64_t latent_numel = mul({latent[0], latent[1], latent[2], latent[3], latent[4]});
  const std::int64_t tokens = mul({latent[2] / t.patch_size[0], latent[3] / t.patch_size[1], latent[4] / t.patch_size[2]});
  const std::int64_t esize = static_cast<std::int64_t>(dtype_size(options.dtype));

  pipeline::StageNeed denoise{"denoising", cuda, {}};
  if (!loaded)
    denoise.parts.emplace_back("transformer weights",
                               transformer_weight_bytes(t, options.dtype, options.parallel.degrees.tensor_parallel));
  denoise.parts.emplace_back("latents, velocity and solver state", mul({latent_numel, 3, 4}));
  denoise.parts.emplace_back("activations", mul({tokens, checked_add(mul({4, t.inner_dim()}), t.ffn_dim, kWhat), esize}));

  const Shape video = v.video_shape(latent);
  const std::int64_t video_bytes = mul({video[0], video[1], video[2], video[3], video[4], 4});
  pipeline::StageNeed decode{"vae decode", cuda, {}};
  if (!loaded) decode.parts.emplace_back("vae weights", vae_weight_bytes(v));
  decode.parts.emplace_back("decoded video", video_bytes);
  decode.parts.emplace_back("one feature map at full resolution",
                            mul({v.decoder_base_dim, video[3] / v.patch_size, video[4] / v.patch_size, 4}));
  // The frames [F, H, W, 3] are made on the host from the video (on the CPU, beside it).
  if (!cuda) decode.parts.emplace_back("frames", video_bytes);
  std::vector<pipeline::StageNeed> out = {denoise, decode};
  if (cuda) out.push_back({"frame output", false, {{"decoded video", video_bytes}, {"frames", video_bytes}}});
  return out;
}

}  // namespace dattn
