#pragma once
// diffusers UniPCMultistepScheduler (UniPC: a unified predictor-corrector, B(h) variants) in the form
// flow-matching models use: use_flow_sigmas, prediction_type "flow_prediction", predict_x0.
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "dattn/pipeline/scheduler.h"

namespace dattn {

// The config fields that matter for flow sigmas, with diffusers' defaults where it has one that we
// support. The loader rejects the values that select code paths not implemented here.
struct UniPCConfig {
  int num_train_timesteps = 1000;
  int solver_order = 2;           // 1..3
  bool solver_bh2 = true;         // solver_type "bh2" (else "bh1")
  bool lower_order_final = true;  // lower orders for the last steps
  std::set<int> disable_corrector;
  double flow_shift = 1.0;
  std::optional<double> shift_terminal;  // stretch the shifted sigmas to end at this value
  bool final_sigma_zero = true;          // final_sigmas_type "zero" (else "sigma_min")
};

class UniPCMultistepScheduler final : public Scheduler {
 public:
  explicit UniPCMultistepScheduler(UniPCConfig config);  // throws UserError for values out of range

  std::string name() const override { return "UniPCMultistepScheduler"; }
  void set_timesteps(int num_inference_steps) override;
  int num_train_timesteps() const override { return config_.num_train_timesteps; }
  const UniPCConfig& config() const { return config_; }

 private:
  Tensor step_impl(const Tensor& model_output, int step_index, const Tensor& sample) override;
  Tensor predict(int order, const Tensor& x, DType out_dtype) const;
  Tensor correct(const Tensor& model_t) const;

  UniPCConfig config_;
  std::vector<float> sigmas_f32_;  // diffusers keeps sigmas in float32
  // Solver state, on the samples' device: the converted outputs (x0 predictions, fp64) of the last
  // solver_order steps, newest last, and the sample the last prediction started from.
  std::vector<Tensor> model_outputs_;
  Tensor last_sample_;
  int lower_order_nums_ = 0;
  int this_order_ = 0;
  int step_index_ = 0;
};

}  // namespace dattn
