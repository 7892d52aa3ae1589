// The denoising loop of diffusers' WanPipeline: per step, the transformer on the prompt (and the
// negative prompt), classifier-free guidance, one scheduler step.
#include <cstring>

#include "dattn/models/wan/transformer.h"
#include "pipeline/wan_t2v/stage_clock.h"
#include "pipeline/wan_t2v/stages.h"

namespace dattn::wan_t2v {
namespace {

// The transformer's timestep input at t. With expand_timesteps (Wan2.2 TI2V) it is one value per
// latent token, [1, S]; for text to video there is no conditioning frame, so every token gets t (the
// pipeline's mask is all ones). Otherwise one value for the batch, [1].
Tensor timestep_input(const WanPipelineInfo& info, const Shape& latent_shape, double t) {
  if (!info.expand_timesteps) return Tensor::from_f64({t}, {1}, DType::F64);
  const auto& p = info.transformer.patch_size;
  const std::int64_t tokens = latent_shape[2] / p[0] * (latent_shape[3] / p[1]) * (latent_shape[4] / p[2]);
  return Tensor::from_f64(std::vector<double>(static_cast<std::size_t>(tokens), t), {1, tokens}, DType::F64);
}

// noise_uncond + g * (noise_cond - noise_uncond), one float32 rounding per operation as torch does.
Tensor guide(const Tensor& cond, const Tensor& uncond, double guidance_scale) {
  Tensor out = Tensor::empty(cond.shape(), DType::F32);
  const float* c = cond.data_as<float>();
  const float* u = uncond.data_as<float>();
  float* o = out.data_as<float>();
  const float g = static_cast<float>(guidance_scale);
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    const float diff = c[i] - u[i];
    const float scaled = g * diff;
    o[i] = u[i] + scaled;
  }
  return out;
}

Tensor to_host_f32(const Tensor& t) { return t.to(Device::CPU).to(DType::F32); }

}  // namespace

Tensor denoise(const WanPipelineInfo& info, const WanT2VRequest& request, const TextEmbeddings& text, Tensor latents,
               const WanRunSettings& settings, const WanT2VObserver& observer, std::vector<Resolution>& attention,
               StageTimes& times) {
  const auto scheduler = load_scheduler(info.scheduler_config, SchedulerOverrides{request.flow_shift});
  scheduler->set_timesteps(request.num_inference_steps);

  StageClock load_clock;
  const WanTransformer model =
      WanTransformer::load(info.transformer_dir, WanRunOptions{settings.device, settings.dtype, settings.attention});
  attention = wan_attention_resolutions(model.config(), settings);
  times.emplace_back("load transformer", load_clock.ms());

  StageClock clock;
  const bool guidance = text.negative.defined();
  // The embeddings in the transformer's dtype on its device once, not converted again in every forward
  // (umT5 runs in fp32 for an fp16 transformer).
  const Tensor prompt = text.prompt.to(settings.device).to(settings.dtype);
  const Tensor negative = guidance ? text.negative.to(settings.device).to(settings.dtype) : Tensor();
  const int n = scheduler->num_inference_steps();
  for (int i = 0; i < n; ++i) {
    StageClock step_clock;
    const double t = scheduler->timesteps()[static_cast<std::size_t>(i)];
    const Tensor timestep = timestep_input(info, latents.shape(), t);
    Tensor noise_pred = to_host_f32(model.forward(latents, timestep, prompt));
    if (guidance) {
      const Tensor noise_uncond = to_host_f32(model.forward(latents, timestep, negative));
      noise_pred = guide(noise_pred, noise_uncond, request.guidance_scale);
    }
    latents = scheduler->step(noise_pred, i, latents);
    if (observer.on_step) observer.on_step(i, n, t, latents, step_clock.ms());
  }
  times.emplace_back("denoising", clock.ms());
  return latents;
}

}  // namespace dattn::wan_t2v
