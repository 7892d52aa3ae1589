#pragma once
// diffusers FlowMatchEulerDiscreteScheduler: Euler steps of the flow ODE over shifted sigmas.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dattn/pipeline/scheduler.h"

namespace dattn {

struct FlowMatchEulerConfig {
  int num_train_timesteps = 1000;
  double shift = 1.0;
  std::optional<double> shift_terminal;
  bool invert_sigmas = false;  // Mochi: sigmas 1 - s, final sigma 1
};

class FlowMatchEulerDiscreteScheduler final : public Scheduler {
 public:
  explicit FlowMatchEulerDiscreteScheduler(FlowMatchEulerConfig config);  // throws UserError

  std::string name() const override { return "FlowMatchEulerDiscreteScheduler"; }
  void set_timesteps(int num_inference_steps) override;
  // diffusers' set_timesteps(sigmas=...): the given (unshifted) sigmas, rounded to float32, shifted in
  // float32 arithmetic (numpy's, the array being float32), timesteps = sigma * num_train_timesteps.
  // HunyuanVideo-1.5's pipeline passes linspace(1, 0, n + 1)[:-1]. UserError for an empty list or a
  // sigma outside [0, 1].
  void set_sigmas(std::span<const double> sigmas);
  int num_train_timesteps() const override { return config_.num_train_timesteps; }
  const FlowMatchEulerConfig& config() const { return config_; }

 private:
  Tensor step_impl(const Tensor& model_output, int step_index, const Tensor& sample) override;
  // From sigmas_f32_ (one per step): inversion, timesteps, the final sigma.
  void finish_schedule();

  FlowMatchEulerConfig config_;
  double sigma_min_ = 0, sigma_max_ = 1;  // of the shifted training schedule
  std::vector<float> sigmas_f32_;
};

}  // namespace dattn
