// The scheduler interface: argument checks and the float / tensor forms of step(), shared by every
// scheduler, which implements only the double update.
#include "dattn/pipeline/scheduler.h"

#include <cmath>

#include "dattn/core/error.h"

namespace dattn {

void Scheduler::reset_steps() { next_step_ = -1; }

void Scheduler::check_step_count(int n) const {
  // No upper bound here: the solver tests converge against 1600 steps of a 1000-step training schedule.
  // A request is bounded by num_train_timesteps before any work (pipeline/common/request_checks.h).
  if (n < 1) throw UserError(name() + ": num_inference_steps must be >= 1, got " + std::to_string(n));
}

int Scheduler::index_for_timestep(double timestep) const {
  std::vector<int> hits;
  for (std::size_t i = 0; i < timesteps_.size(); ++i)
    if (timesteps_[i] == timestep) hits.push_back(static_cast<int>(i));
  if (hits.empty())
    throw UserError(name() + ": timestep " + std::to_string(timestep) + " is not in the schedule of " +
                    std::to_string(timesteps_.size()) + " steps");
  // diffusers takes the second match so that a repeated first timestep does not skip a sigma.
  return hits.size() > 1 ? hits[1] : hits[0];
}

void Scheduler::check_step(std::size_t output_size, int step_index, std::size_t sample_size) {
  if (timesteps_.empty()) throw UserError(name() + ": step() called before set_timesteps()");
  if (step_index < 0 || step_index >= num_inference_steps())
    throw UserError(name() + ": step index " + std::to_string(step_index) + " is outside [0, " +
                    std::to_string(num_inference_steps()) + ")");
  // Multistep solvers keep the outputs of previous steps: skipping or repeating one corrupts them.
  if (next_step_ >= 0 && step_index != next_step_)
    throw UserError(name() + ": step index " + std::to_string(step_index) + " out of order, expected " +
                    std::to_string(next_step_) + " (call set_timesteps() to restart)");
  if (output_size != sample_size)
    throw UserError(name() + ": model output has " + std::to_string(output_size) + " elements, the sample " +
                    std::to_string(sample_size));
  next_step_ = step_index + 1;
}

std::vector<double> Scheduler::step(std::span<const double> model_output, int step_index,
                                    std::span<const double> sample) {
  const Shape shape{static_cast<std::int64_t>(sample.size())};
  const Tensor m = Tensor::from_f64(std::vector<double>(model_output.begin(), model_output.end()),
                                    {static_cast<std::int64_t>(model_output.size())}, DType::F64);
  const Tensor x = Tensor::from_f64(std::vector<double>(sample.begin(), sample.end()), shape, DType::F64);
  return step(m, step_index, x).to_f64_vector();
}

std::vector<float> Scheduler::step(std::span<const float> model_output, int step_index,
                                   std::span<const float> sample) {
  const Tensor m = Tensor::from_f32(std::vector<float>(model_output.begin(), model_output.end()),
                                    {static_cast<std::int64_t>(model_output.size())});
  const Tensor x = Tensor::from_f32(std::vector<float>(sample.begin(), sample.end()),
                                    {static_cast<std::int64_t>(sample.size())});
  return step(m, step_index, x).to_f32_vector();
}

Tensor Scheduler::step(const Tensor& model_output, int step_index, const Tensor& sample) {
  auto float_or_double = [](const Tensor& t) { return t.dtype() == DType::F32 || t.dtype() == DType::F64; };
  if (!model_output.defined() || !sample.defined())
    throw UserError(name() + ": step() needs a model output and a sample");
  if (!float_or_double(model_output) || !float_or_double(sample))
    throw UserError(name() + ": model output " + model_output.describe() + " and sample " + sample.describe() +
                    " must be fp32 or fp64");
  if (model_output.device() != sample.device())
    throw UserError(name() + ": model output " + model_output.describe() + " and sample " + sample.describe() +
                    " must be on one device");
  if (model_output.numel() == sample.numel() && model_output.shape() != sample.shape())
    throw UserError(name() + ": model output " + model_output.describe() + " and sample " + sample.describe() +
                    " must have the same shape");
  check_step(static_cast<std::size_t>(model_output.numel()), step_index, static_cast<std::size_t>(sample.numel()));
  return step_impl(model_output, step_index, sample);
}

}  // namespace dattn
