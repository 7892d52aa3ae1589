// UniPC with flow sigmas, following diffusers' UniPCMultistepScheduler (predict_x0, B(h) variants).
// In flow matching alpha_t = 1 - sigma_t, and lambda = log(alpha) - log(sigma) is the log-SNR time.
// Scalars are float32 as diffusers' 0-dim tensors are; each float32 expression below keeps the
// operation order of the Python so that it rounds identically, and is widened to double only where a
// float32 scalar meets the (double) sample, as torch's type promotion does.
#include "dattn/pipeline/unipc_scheduler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "dattn/core/error.h"
#include "dattn/ops/combine.h"
#include "pipeline/schedulers/schedule_math.h"

namespace dattn {
namespace {

float lambda_of(float sigma) { return sched::log_f32(1.0f - sigma) - sched::log_f32(sigma); }

// The coefficients one predictor or corrector update needs between sigma_s0 and sigma_t.
struct StepCoeffs {
  float sigma_ratio;   // sigma_t / sigma_s0
  float alpha_hphi1;   // alpha_t * h_phi_1
  float alpha_bh;      // alpha_t * B_h
  std::vector<float> rks;  // (lambda_si - lambda_s0) / h of the older steps, then 1
  std::vector<float> b;    // right-hand side of the order conditions, one per order
};

// `older` holds the sigmas of the previous steps s1, s2, ... (one fewer than `order`).
StepCoeffs coeffs(float sigma_t, float sigma_s0, const std::vector<float>& older, int order, bool bh2) {
  StepCoeffs c;
  const float alpha_t = 1.0f - sigma_t;
  const float h = lambda_of(sigma_t) - lambda_of(sigma_s0);
  const float lambda_s0 = lambda_of(sigma_s0);
  for (float sigma_si : older) c.rks.push_back((lambda_of(sigma_si) - lambda_s0) / h);
  c.rks.push_back(1.0f);
  const float hh = -h;  // predict_x0
  const float h_phi_1 = sched::expm1_f32(hh);
  float h_phi_k = h_phi_1 / hh - 1.0f;
  const float b_h = bh2 ? sched::expm1_f32(hh) : hh;
  long factorial = 1;
  for (int i = 1; i <= order; ++i) {
    c.b.push_back(h_phi_k * static_cast<float>(factorial) / b_h);
    factorial *= i + 1;
    h_phi_k = h_phi_k / hh - static_cast<float>(1.0 / static_cast<double>(factorial));
  }
  c.sigma_ratio = sigma_t / sigma_s0;
  c.alpha_hphi1 = alpha_t * h_phi_1;
  c.alpha_bh = alpha_t * b_h;
  return c;
}

// torch.pow(rks, i) for the R matrix of the order conditions (pow 2 is a square in torch).
float pow_f32(float r, int i) {
  float p = 1.0f;
  if (i >= 1) p = r;
  for (int k = 2; k <= i; ++k) p = p * r;
  return p;
}

// Solves R[:n, :n] rho = b[:n] where R[i][j] = rks[j]^i, in float32 as torch.linalg.solve does.
std::vector<double> solve_rhos(const StepCoeffs& c, int n) {
  std::vector<float> a(static_cast<std::size_t>(n * n));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) a[i * n + j] = pow_f32(c.rks[j], i);
  std::vector<float> rhs(c.b.begin(), c.b.begin() + n);
  std::vector<float> rho = sched::solve_f32(std::move(a), std::move(rhs));
  return std::vector<double>(rho.begin(), rho.end());
}

}  // namespace

UniPCMultistepScheduler::UniPCMultistepScheduler(UniPCConfig config) : config_(std::move(config)) {
  if (config_.num_train_timesteps < 1)
    throw UserError("UniPCMultistepScheduler: num_train_timesteps must be >= 1, got " +
                    std::to_string(config_.num_train_timesteps));
  if (config_.solver_order < 1 || config_.solver_order > 3)
    throw UserError("UniPCMultistepScheduler: solver_order must be 1, 2 or 3, got " +
                    std::to_string(config_.solver_order));
  // Without lower_order_final the last step reaches sigma 0 (an infinite log-SNR step) or repeats the
  // last sigma (a zero step) with multistep terms: diffusers returns inf or NaN there, or fails.
  if (!config_.lower_order_final && config_.solver_order >= (config_.final_sigma_zero ? 2 : 3))
    throw UserError("UniPCMultistepScheduler: lower_order_final false with solver_order " +
                    std::to_string(config_.solver_order) + " and final_sigmas_type \"" +
                    (config_.final_sigma_zero ? "zero" : "sigma_min") +
                    "\" gives inf or NaN in the last step (as in diffusers): set lower_order_final to true");
  if (!(config_.flow_shift > 0) || !std::isfinite(config_.flow_shift))
    throw UserError("UniPCMultistepScheduler: flow_shift must be a positive number, got " +
                    std::to_string(config_.flow_shift));
}

void UniPCMultistepScheduler::set_timesteps(int n) {
  check_step_count(n);
  const double num_train = config_.num_train_timesteps;
  std::vector<double> s = sched::np_linspace(1.0, 1.0 / num_train, n + 1);
  s.pop_back();
  s = sched::shift_sigmas(s, config_.flow_shift);
  if (config_.shift_terminal && *config_.shift_terminal != 0.0) s = sched::stretch_to_terminal(s, *config_.shift_terminal);
  // diffusers moves a first sigma of 1 below 1 so that log(alpha) stays finite.
  if (std::fabs(s[0] - 1.0) < 1e-6) s[0] -= 1e-6;
  timesteps_.clear();
  for (double v : s) timesteps_.push_back(std::trunc(v * num_train));  // astype(int64) truncates
  const double last = config_.final_sigma_zero ? 0.0 : s.back();
  s.push_back(last);
  sigmas_f32_.assign(s.begin(), s.end());
  sigmas_.assign(sigmas_f32_.begin(), sigmas_f32_.end());
  model_outputs_.assign(static_cast<std::size_t>(config_.solver_order), Tensor());
  last_sample_ = Tensor();
  lower_order_nums_ = 0;
  this_order_ = 0;
  step_index_ = 0;
  reset_steps();
}

// multistep_uni_p_bh_update: from the sample at step_index_ to the next sigma, as one linear
// combination of x and the stored x0 predictions: ratio x - alpha h_phi_1 m0 - alpha B_h sum_i
// rho_i (m_i - m0) / r_i, with the differences distributed over their terms.
Tensor UniPCMultistepScheduler::predict(int order, const Tensor& x, DType out_dtype) const {
  const int k = step_index_;
  std::vector<float> older;
  for (int i = 1; i < order; ++i) older.push_back(sigmas_f32_[k - i]);
  const StepCoeffs c = coeffs(sigmas_f32_[k + 1], sigmas_f32_[k], older, order, config_.solver_bh2);
  // Order 2 uses rho = 0.5 (diffusers' simplification); higher orders solve the order conditions.
  std::vector<double> rhos;
  if (order == 2) rhos = {0.5};
  else if (order > 2) rhos = solve_rhos(c, order - 1);
  const double a_bh = c.alpha_bh;
  std::vector<ops::ScaledTensor> terms{{static_cast<double>(c.sigma_ratio), x}};
  double m0_coefficient = -static_cast<double>(c.alpha_hphi1);
  for (int i = 1; i < order; ++i) {
    const double w = rhos[i - 1] / static_cast<double>(c.rks[i - 1]);
    terms.push_back({-a_bh * w, model_outputs_[model_outputs_.size() - 1 - i]});
    m0_coefficient += a_bh * w;
  }
  terms.insert(terms.begin() + 1, ops::ScaledTensor{m0_coefficient, model_outputs_.back()});
  return ops::linear_combination(terms, out_dtype);
}

// multistep_uni_c_bh_update: corrects the last prediction with the model output at it (model_t):
// ratio last - alpha h_phi_1 m0 - alpha B_h (sum_i rho_i (m_i - m0) / r_i + rho_t (model_t - m0)).
Tensor UniPCMultistepScheduler::correct(const Tensor& model_t) const {
  const int k = step_index_, order = this_order_;
  std::vector<float> older;
  for (int i = 1; i < order; ++i) older.push_back(sigmas_f32_[k - (i + 1)]);
  const StepCoeffs c = coeffs(sigmas_f32_[k], sigmas_f32_[k - 1], older, order, config_.solver_bh2);
  const std::vector<double> rhos = order == 1 ? std::vector<double>{0.5} : solve_rhos(c, order);
  const double a_bh = c.alpha_bh, rho_t = rhos.back();
  std::vector<ops::ScaledTensor> terms{{static_cast<double>(c.sigma_ratio), last_sample_}};
  double m0_coefficient = -static_cast<double>(c.alpha_hphi1) + a_bh * rho_t;
  for (int i = 1; i < order; ++i) {
    const double w = rhos[i - 1] / static_cast<double>(c.rks[i - 1]);
    terms.push_back({-a_bh * w, model_outputs_[model_outputs_.size() - 1 - i]});
    m0_coefficient += a_bh * w;
  }
  terms.insert(terms.begin() + 1, ops::ScaledTensor{m0_coefficient, model_outputs_.back()});
  terms.push_back({-a_bh * rho_t, model_t});
  return ops::linear_combination(terms, DType::F64);
}

Tensor UniPCMultistepScheduler::step_impl(const Tensor& model_output, int step_index, const Tensor& sample) {
  if (step_index_ != step_index) {  // a run that starts later than step 0
    step_index_ = step_index;
    last_sample_ = Tensor();
  }
  const int k = step_index_;
  // convert_model_output: the x0 prediction of flow_prediction, kept in double.
  const double sigma = sigmas_f32_[k];
  Tensor converted = ops::linear_combination({{1.0, sample}, {-sigma, model_output}}, DType::F64);

  const bool use_corrector = k > 0 && !config_.disable_corrector.count(k - 1) && last_sample_.defined();
  // The corrected sample stays in double for the predictor; only the step's result is rounded.
  const Tensor x = use_corrector ? correct(converted) : sample;

  std::rotate(model_outputs_.begin(), model_outputs_.begin() + 1, model_outputs_.end());
  model_outputs_.back() = std::move(converted);

  int order = config_.solver_order;
  if (config_.lower_order_final) order = std::min(order, num_inference_steps() - k);
  this_order_ = std::min(order, lower_order_nums_ + 1);  // warm-up: the history is still short
  last_sample_ = x;
  Tensor out = predict(this_order_, last_sample_, sample.dtype());
  lower_order_nums_ = std::min(lower_order_nums_ + 1, config_.solver_order);
  ++step_index_;
  return out;
}

}  // namespace dattn
