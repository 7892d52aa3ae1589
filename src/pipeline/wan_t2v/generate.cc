// generate_wan_t2v: the stages in order (see wan_t2v.h).
#include "dattn/pipeline/wan_t2v.h"
#include "pipeline/wan_t2v/stage_memory.h"
#include "pipeline/wan_t2v/stages.h"

namespace dattn {

WanT2VResult generate_wan_t2v(const WanPipelineInfo& info, const WanT2VRequest& request, const WanRunSettings& settings,
                              const WanT2VObserver& observer) {
  check_wan_t2v_request(info, request);
  const bool guidance = request.guidance_scale > 1.0;  // diffusers' do_classifier_free_guidance
  WanT2VResult result;
  wan_t2v::TextEmbeddings text;
  {
    const wan_t2v::StageMemoryScope memory("text encoder", settings.device);
    text = wan_t2v::encode_text(info, request, guidance, settings, result.stage_ms);
    result.stage_memory.push_back(memory.finish());
  }
  if (observer.on_text) observer.on_text(text.prompt, guidance ? &text.negative : nullptr);

  Tensor latents = request.initial_latents.defined() ? request.initial_latents.to(Device::CPU).to(DType::F32)
                                                     : seeded_gaussian(wan_latent_shape(info, request), request.seed);
  {
    const wan_t2v::StageMemoryScope memory("denoising", settings.device);
    latents = wan_t2v::denoise(info, request, text, latents, settings, observer, result.attention, result.stage_ms);
    result.stage_memory.push_back(memory.finish());
  }
  text = {};  // the embeddings are not needed for decoding
  {
    const wan_t2v::StageMemoryScope memory("vae decode", settings.device);
    result.frames = wan_t2v::decode_video(info, latents, settings, result.stage_ms);
    result.stage_memory.push_back(memory.finish());
  }
  return result;
}

}  // namespace dattn
