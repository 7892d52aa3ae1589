#pragma once
// Noise schedulers of the flow-matching pipelines: the diffusers UniPCMultistepScheduler with flow
// sigmas (the Wan default) and FlowMatchEulerDiscreteScheduler, read from a diffusers
// `scheduler/scheduler_config.json`.
//
// Usage: set_timesteps(n), then for i = 0..n-1 call the model at timesteps()[i] and
// step(model_output, i, sample) to get the sample at sigmas()[i + 1]. Steps run in order; the first
// step after set_timesteps may start at any index (as image-to-video does), later ones must follow.
//
// Arithmetic reproduces diffusers exactly: the schedule is computed in float64 like numpy and stored
// in float32 like the torch tensors, the solver's scalar coefficients are float32 like diffusers'
// 0-dim tensors, and the per-element updates run in double as linear combinations of the sample and
// the stored model outputs (ops::linear_combination), on the sample's device: the samples and the
// solver's history never leave the GPU between steps. Float32 samples are updated in double and rounded
// once at the end (diffusers rounds after every operation: a difference of float32 rounding).
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"

namespace dattn {

class Scheduler {
 public:
  virtual ~Scheduler() = default;

  // The diffusers class name, e.g. "UniPCMultistepScheduler".
  virtual std::string name() const = 0;
  // Computes the schedule for `num_inference_steps` (>= 1) and resets the solver state.
  virtual void set_timesteps(int num_inference_steps) = 0;
  // The training schedule's length (the config's num_train_timesteps): the most steps a request may ask
  // (more would repeat timesteps; the solver itself takes any count, as its convergence tests do).
  virtual int num_train_timesteps() const = 0;

  // The model's timestep per step (integers for UniPC, float32 values for FlowMatchEuler).
  const std::vector<double>& timesteps() const { return timesteps_; }
  // num_inference_steps + 1 values: the sigma at each step, then the final sigma.
  const std::vector<double>& sigmas() const { return sigmas_; }
  int num_inference_steps() const { return static_cast<int>(timesteps_.size()); }
  // The index of `timestep` in timesteps() as diffusers finds it (first match; the second when the
  // value repeats); throws UserError when it is not in the schedule.
  int index_for_timestep(double timestep) const;

  // One step from sigmas()[step_index] to sigmas()[step_index + 1]. Shapes are flat and equal.
  std::vector<double> step(std::span<const double> model_output, int step_index, std::span<const double> sample);
  std::vector<float> step(std::span<const float> model_output, int step_index, std::span<const float> sample);
  // Tensors of equal shape on one device (CPU or CUDA), each F32 or F64; the update runs on that device
  // and the result has the sample's shape, dtype and device.
  Tensor step(const Tensor& model_output, int step_index, const Tensor& sample);

 protected:
  // The update of checked arguments: the next sample in `sample`'s dtype, on its device.
  virtual Tensor step_impl(const Tensor& model_output, int step_index, const Tensor& sample) = 0;
  // Called by set_timesteps implementations once timesteps_ and sigmas_ are set.
  void reset_steps();
  // UserError unless n >= 1, naming the scheduler.
  void check_step_count(int n) const;

  std::vector<double> timesteps_;
  std::vector<double> sigmas_;

 private:
  void check_step(std::size_t output_size, int step_index, std::size_t sample_size);
  int next_step_ = -1;  // -1: any index may start
};

// Values given by the user that override the config file (the CLI's --flow-shift).
struct SchedulerOverrides {
  // UniPC's `flow_shift`, FlowMatchEuler's `shift`.
  std::optional<double> flow_shift;
};

// Reads a diffusers scheduler_config.json. Throws UserError naming the file and the field for a missing
// or mistyped field, an unknown class or key, and every option value that would change the result and
// is not implemented.
std::unique_ptr<Scheduler> load_scheduler(const std::string& config_path, const SchedulerOverrides& overrides = {});
// The same from JSON text; `source` names it in messages.
std::unique_ptr<Scheduler> scheduler_from_json(const std::string& json_text, const std::string& source,
                                               const SchedulerOverrides& overrides = {});

}  // namespace dattn
