// FlowMatchEulerDiscreteScheduler as diffusers computes it. The training schedule (float32 torch)
// only fixes sigma_max and sigma_min; set_timesteps spaces between them in float64 and applies the
// shift again (so the shift acts twice on the end points, as in diffusers), then stores float32.
// Given sigmas (set_sigmas) are shifted once, in float32.
#include "dattn/pipeline/flow_match_euler_scheduler.h"

#include <cmath>
#include <limits>

#include "dattn/core/error.h"
#include "dattn/ops/combine.h"
#include "pipeline/schedulers/schedule_math.h"

namespace dattn {

FlowMatchEulerDiscreteScheduler::FlowMatchEulerDiscreteScheduler(FlowMatchEulerConfig config)
    : config_(std::move(config)) {
  if (config_.num_train_timesteps < 1)
    throw UserError("FlowMatchEulerDiscreteScheduler: num_train_timesteps must be >= 1, got " +
                    std::to_string(config_.num_train_timesteps));
  // The shift is applied in float32: it must be a positive float32 that is finite and normal.
  const float shift_f32 = static_cast<float>(config_.shift);
  if (!(shift_f32 >= std::numeric_limits<float>::min()) || !std::isfinite(shift_f32))
    throw UserError("FlowMatchEulerDiscreteScheduler: shift must be a positive number, got " +
                    std::to_string(config_.shift));
  // __init__: t = 1000..1 (float32), s = t / N, shifted in float32 torch arithmetic.
  const int n = config_.num_train_timesteps;
  const float shift = static_cast<float>(config_.shift);
  const float shift_m1 = static_cast<float>(config_.shift - 1.0);
  auto shifted = [&](int t) {
    const float s = static_cast<float>(t) / static_cast<float>(n);
    return shift * s / (1.0f + shift_m1 * s);
  };
  sigma_max_ = shifted(n);
  sigma_min_ = shifted(1);
}

void FlowMatchEulerDiscreteScheduler::set_timesteps(int n) {
  check_step_count(n);
  const double num_train = config_.num_train_timesteps;
  std::vector<double> t = sched::np_linspace(sigma_max_ * num_train, sigma_min_ * num_train, n);
  std::vector<double> s(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) s[i] = t[i] / num_train;
  s = sched::shift_sigmas(s, config_.shift);
  if (config_.shift_terminal && *config_.shift_terminal != 0.0) s = sched::stretch_to_terminal(s, *config_.shift_terminal);

  sigmas_f32_.assign(s.begin(), s.end());
  finish_schedule();
}

void FlowMatchEulerDiscreteScheduler::set_sigmas(std::span<const double> sigmas) {
  check_step_count(static_cast<int>(sigmas.size()));
  const float shift = static_cast<float>(config_.shift), shift_m1 = static_cast<float>(config_.shift - 1.0);
  sigmas_f32_.clear();
  for (double v : sigmas) {
    if (!(v >= 0.0 && v <= 1.0))
      throw UserError("FlowMatchEulerDiscreteScheduler: sigma " + std::to_string(v) + " is outside [0, 1]");
    const float x = static_cast<float>(v);
    sigmas_f32_.push_back(shift * x / (1.0f + shift_m1 * x));
  }
  if (config_.shift_terminal && *config_.shift_terminal != 0.0) {
    const std::vector<double> d(sigmas_f32_.begin(), sigmas_f32_.end());
    const std::vector<double> stretched = sched::stretch_to_terminal(d, *config_.shift_terminal);
    sigmas_f32_.assign(stretched.begin(), stretched.end());
  }
  finish_schedule();
}

void FlowMatchEulerDiscreteScheduler::finish_schedule() {
  const float num_train_f = static_cast<float>(config_.num_train_timesteps);
  if (config_.invert_sigmas)
    for (float& v : sigmas_f32_) v = 1.0f - v;
  timesteps_.clear();
  for (float v : sigmas_f32_) timesteps_.push_back(static_cast<double>(v * num_train_f));  // float32 product
  sigmas_f32_.push_back(config_.invert_sigmas ? 1.0f : 0.0f);
  sigmas_.assign(sigmas_f32_.begin(), sigmas_f32_.end());
  reset_steps();
}

Tensor FlowMatchEulerDiscreteScheduler::step_impl(const Tensor& model_output, int step_index, const Tensor& sample) {
  const float dt = sigmas_f32_[step_index + 1] - sigmas_f32_[step_index];
  // diffusers casts the sample to float32 before the update (prev = sample + dt * model_output, with
  // the product in the model output's precision); for a float32 sample that is a no-op.
  const Tensor x = ops::cast(sample, DType::F32);
  return ops::linear_combination({{1.0, x}, {static_cast<double>(dt), model_output}}, sample.dtype());
}

}  // namespace dattn
