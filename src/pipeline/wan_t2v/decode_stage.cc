// The decode stage: latents de-normalised, Wan VAE decode, diffusers' postprocess to [0, 1] frames.
#include <algorithm>

#include "pipeline/wan_t2v/stage_clock.h"
#include "pipeline/wan_t2v/stages.h"

namespace dattn::wan_t2v {
namespace {

// video [1, 3, F, H, W] in [-1, 1] -> frames [F, H, W, 3]: (x * 0.5 + 0.5) clamped to [0, 1] as
// diffusers' VaeImageProcessor.denormalize does, channels last as its "np" output.
Tensor postprocess(const Tensor& video) {
  const std::int64_t c = video.dim(1), f = video.dim(2), h = video.dim(3), w = video.dim(4);
  Tensor frames = Tensor::empty({f, h, w, c}, DType::F32);
  const float* src = video.data_as<float>();
  float* dst = frames.data_as<float>();
  const std::int64_t plane = f * h * w;
  for (std::int64_t ch = 0; ch < c; ++ch)
    for (std::int64_t i = 0; i < plane; ++i) dst[i * c + ch] = std::clamp(src[ch * plane + i] * 0.5f + 0.5f, 0.0f, 1.0f);
  return frames;
}

}  // namespace

// The VAE runs on the pipeline's device in fp32 whatever the transformer's dtype (diffusers runs this VAE
// in fp32); on CUDA its convolutions use TF32 tensor cores, as PyTorch's do by default. The video comes
// back to the host for the postprocess.
Tensor decode_video(const WanPipelineInfo& info, const Tensor& latents, const WanRunSettings& settings,
                    StageTimes& times) {
  StageClock load_clock;
  const WanVae vae = WanVae::load(info.vae_dir, settings.device, DType::F32);
  times.emplace_back("load vae", load_clock.ms());
  StageClock clock;
  const Tensor video = vae.decode(denormalize_latents(latents, vae.config())).to(Device::CPU);
  Tensor frames = postprocess(video);
  times.emplace_back("vae decode", clock.ms());
  return frames;
}

}  // namespace dattn::wan_t2v
