// A HunyuanVideo-1.5 request's memory lower bound per stage (see request_memory.h).
#include "pipeline/hunyuanvideo15/request_memory.h"

#include <initializer_list>
#include <string>

#include "dattn/core/checked_math.h"
#include "dattn/models/hunyuanvideo15/manifest.h"
#include "dattn/models/hunyuanvideo15/tensor_parallel.h"

namespace dattn {
namespace {

constexpr std::string_view kWhat = "--height x --width x --num-frames (the memory estimate)";

std::int64_t mul(std::initializer_list<std::int64_t> factors) { return pipeline::checked_product(factors, kWhat); }

}  // namespace

std::vector<pipeline::StageNeed> hv15_request_memory(const Hv15PipelineInfo& info, const GenerationRequest& r,
                                                     const PipelineOptions& options) {
  const auto& t = info.transformer;
  const bool loaded = options.residency == Residency::Resident;
  const bool cuda = options.device == Device::CUDA;
  const Shape latent = hv15_latent_shape(info, r);
  const std::int64_t latent_numel = mul({latent[0], latent[1], latent[2], latent[3], latent[4]});
  const std::int64_t tokens = mul({latent[2], latent[3] / t.patch_size, latent[4] / t.patch_size});
  const auto esize = static_cast<std::int64_t>(dtype_size(options.dtype));

  pipeline::StageNeed denoise{"denoising", cuda, {}};
  if (!loaded) {
    std::int64_t weights = 0;
    // One rank's weights: under tensor parallel only its slices of the blocks' split tensors.
    const int tp = options.parallel.degrees.tensor_parallel;
    for (const ParamSpec& p : hunyuanvideo15_transformer_manifest(t)) {
      std::int64_t numel = shape_numel(p.shape);
      if (tp > 1)
        if (const auto part = hunyuanvideo15_tensor_parallel_slice(p.name, t, 0, tp))
          numel = numel / p.shape[static_cast<std::size_t>(part->dim)] * part->length;
      weights = checked_add(weights, mul({numel, esize}), kWhat);
    }
    denoise.parts.emplace_back("transformer weights", weights);
  }
  denoise.parts.emplace_back("latents, velocity and solver state", mul({latent_numel, 3, 4}));
  denoise.parts.emplace_back("activations", mul({tokens, checked_add(mul({4, t.inner_dim()}), t.mlp_dim(), kWhat), esize}));

  const HunyuanVideo15VaeMemory m = hunyuanvideo15_vae_decode_memory(info.vae, latent);
  pipeline::StageNeed decode{"vae decode", cuda, {}};
  if (!loaded) decode.parts.emplace_back("vae weights", m.weights);
  decode.parts.emplace_back("decoded video", m.video);
  decode.parts.emplace_back("frame caches", m.frame_caches);
  decode.parts.emplace_back("attention cache", m.attention_cache);
  decode.parts.emplace_back("working set", m.working);
  if (!cuda) decode.parts.emplace_back("frames", m.video);
  std::vector<pipeline::StageNeed> out = {denoise, decode};
  if (cuda) out.push_back({"frame output", false, {{"decoded video", m.video}, {"frames", m.video}}});
  return out;
}

}  // namespace dattn
