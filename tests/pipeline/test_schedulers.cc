// Schedulers against diffusers: schedules and whole rollouts of cases/scheduler_rollouts (UniPC with
// flow_shift 5 and 3, FlowMatchEuler with shift 7; 4, 30 and 50 steps; the model output of step i is
// recorded as model_outI), the pipeline case's schedule, and the config loader's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dattn/core/error.h"
#include "dattn/io/safetensors.h"
#include "dattn/pipeline/flow_match_euler_scheduler.h"
#include "dattn/pipeline/scheduler.h"
#include "dattn/pipeline/unipc_scheduler.h"
#include "support/golden_dir.h"

using namespace dattn;

namespace {

std::string cases_dir() { return dattn::testing::golden_dir() + "/wan_tiny/cases"; }
std::string scheduler_config_path() {
  return dattn::testing::golden_dir() + "/wan_tiny/pipeline/scheduler/scheduler_config.json";
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return nlohmann::json::parse(in);
}

// Relative L2 error ||a - b|| / ||b||; NaN when a holds a NaN or Inf.
double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return NAN;
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

// The rollouts JSON names the class under "class"; the loader reads diffusers' "_class_name".
std::unique_ptr<Scheduler> scheduler_for_case(const nlohmann::json& meta, const std::string& name) {
  nlohmann::json cfg = meta;
  cfg["_class_name"] = cfg["class"];
  cfg.erase("class");
  return scheduler_from_json(cfg.dump(), "scheduler_rollouts.json[" + name + "]");
}

void expect_values_equal(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i], want[i]) << what << "[" << i << "] differs by " << got[i] - want[i];
}

struct RolloutCase {
  std::string name;
  int steps;
};

class SchedulerRollout : public ::testing::TestWithParam<RolloutCase> {};

TEST_P(SchedulerRollout, MatchesDiffusers) {
  const auto [name, steps] = GetParam();
  const nlohmann::json meta = read_json(cases_dir() + "/scheduler_rollouts.json");
  ASSERT_TRUE(meta.contains(name)) << "scheduler_rollouts.json has no case " << name;
  SafetensorsFile golden(cases_dir() + "/scheduler_rollouts.safetensors");
  const std::string prefix = name + "." + std::to_string(steps) + ".";

  std::unique_ptr<Scheduler> s = scheduler_for_case(meta[name], name);
  s->set_timesteps(steps);
  // The schedule is float32 in diffusers, so equal means bit-equal.
  expect_values_equal(s->timesteps(), golden.read_f64(prefix + "timesteps"), prefix + "timesteps");
  expect_values_equal(s->sigmas(), golden.read_f64(prefix + "sigmas"), prefix + "sigmas");

  // Free-running rollout from x0 with the recorded model outputs: errors would accumulate.
  std::vector<double> x = golden.read_f64(prefix + "x0");
  double worst = 0;
  for (int i = 0; i < steps; ++i) {
    const std::vector<double> m = golden.read_f64(prefix + "model_out" + std::to_string(i));
    x = s->step(m, i, x);
    const std::vector<double> want = golden.read_f64(prefix + "x" + std::to_string(i + 1));
    const double err = rel_l2(x, want);
    ASSERT_FALSE(std::isnan(err)) << prefix << "step " << i << ": NaN or Inf in the result";
    EXPECT_LT(err, 1e-13) << prefix << "step " << i << ": relative L2 error " << err;
    worst = std::max(worst, err);
  }
  std::cout << "[ rollout  ] " << prefix << " worst relative L2 error over " << steps << " steps: " << worst << "\n";
}

INSTANTIATE_TEST_SUITE_P(Golden, SchedulerRollout,
                         ::testing::Values(RolloutCase{"unipc_flow5", 4}, RolloutCase{"unipc_flow5", 30},
                                           RolloutCase{"unipc_flow5", 50}, RolloutCase{"unipc_flow3", 4},
                                           RolloutCase{"unipc_flow3", 30}, RolloutCase{"unipc_flow3", 50},
                                           RolloutCase{"flowmatch_euler_shift7", 4},
                                           RolloutCase{"flowmatch_euler_shift7", 30},
                                           RolloutCase{"flowmatch_euler_shift7", 50}),
                         [](const auto& info) { return info.param.name + "_" + std::to_string(info.param.steps); });

TEST(Schedulers, PipelineConfigScheduleMatchesPipelineCase) {
  std::unique_ptr<Scheduler> s = load_scheduler(scheduler_config_path());
  EXPECT_EQ(s->name(), "UniPCMultistepScheduler");
  SafetensorsFile golden(cases_dir() + "/pipeline_t2v_fp32.safetensors");
  const int steps = read_json(cases_dir() + "/pipeline_t2v_fp32.json")["num_inference_steps"].get<int>();
  s->set_timesteps(steps);
  expect_values_equal(s->timesteps(), golden.read_f64("scheduler.timesteps"), "scheduler.timesteps");
  expect_values_equal(s->sigmas(), golden.read_f64("scheduler.sigmas"), "scheduler.sigmas");
}

TEST(Schedulers, FloatAndTensorStepsAgreeWithDouble) {
  SafetensorsFile golden(cases_dir() + "/scheduler_rollouts.safetensors");
  std::unique_ptr<Scheduler> a = load_scheduler(scheduler_config_path());
  std::unique_ptr<Scheduler> b = load_scheduler(scheduler_config_path());
  std::unique_ptr<Scheduler> c = load_scheduler(scheduler_config_path());
  a->set_timesteps(4), b->set_timesteps(4), c->set_timesteps(4);
  const Shape shape = golden.info("unipc_flow5.4.x0").shape;
  std::vector<double> xd = golden.read_f64("unipc_flow5.4.x0");
  std::vector<float> xf(xd.begin(), xd.end());
  Tensor xt = Tensor::from_f64(xd, shape, DType::F32);
  for (int i = 0; i < 4; ++i) {
    const std::vector<double> m = golden.read_f64("unipc_flow5.4.model_out" + std::to_string(i));
    xd = a->step(m, i, xd);
    xf = b->step(std::vector<float>(m.begin(), m.end()), i, xf);
    xt = c->step(Tensor::from_f64(m, shape, DType::F32), i, xt);
  }
  EXPECT_EQ(xt.shape(), shape);
  EXPECT_EQ(xt.dtype(), DType::F32);
  EXPECT_LT(rel_l2(std::vector<double>(xf.begin(), xf.end()), xd), 1e-6);
  EXPECT_EQ(xt.to_f64_vector(), std::vector<double>(xf.begin(), xf.end()));
}

TEST(Schedulers, FlowShiftOverrideReplacesTheConfigValue) {
  std::unique_ptr<Scheduler> s = load_scheduler(scheduler_config_path(), SchedulerOverrides{3.0});
  SafetensorsFile golden(cases_dir() + "/scheduler_rollouts.safetensors");
  s->set_timesteps(30);
  expect_values_equal(s->sigmas(), golden.read_f64("unipc_flow3.30.sigmas"), "unipc_flow3.30.sigmas");
}

TEST(Schedulers, StepsMustRunInOrder) {
  std::unique_ptr<Scheduler> s = load_scheduler(scheduler_config_path());
  std::vector<double> x(6, 0.5), m(6, 0.1);
  EXPECT_THROW(s->step(m, 0, x), UserError);  // before set_timesteps
  s->set_timesteps(4);
  x = s->step(m, 0, x);
  try {
    s->step(m, 2, x);
    FAIL() << "skipping a step must throw";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("expected 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s->step(std::vector<double>(5, 0.1), 1, x), UserError);
  EXPECT_THROW(s->step(m, 4, x), UserError);
  EXPECT_EQ(s->index_for_timestep(937), 1);
  EXPECT_THROW(s->index_for_timestep(500), UserError);
}

// Each bad config must fail with a message naming the field and the offending value.
void expect_config_error(const std::string& edit_key, const nlohmann::json& value, const std::string& needle) {
  nlohmann::json cfg = read_json(scheduler_config_path());
  if (value.is_discarded()) cfg.erase(edit_key);
  else cfg[edit_key] = value;
  try {
    scheduler_from_json(cfg.dump(), "scheduler_config.json");
    FAIL() << "no error for " << edit_key << " = " << value.dump();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message for " << edit_key << " lacks '" << needle << "': " << e.what();
  }
}

TEST(Schedulers, ConfigErrorsNameTheFieldAndValue) {
  const nlohmann::json erase = nlohmann::json(nlohmann::json::value_t::discarded);
  expect_config_error("_class_name", erase, "'_class_name' is missing");
  expect_config_error("_class_name", "DDIMScheduler", "\"DDIMScheduler\" is not implemented");
  expect_config_error("use_flow_sigmas", false, "'use_flow_sigmas' is false");
  expect_config_error("use_flow_sigmas", erase, "'use_flow_sigmas' is missing");
  expect_config_error("prediction_type", "epsilon", "'prediction_type' is \"epsilon\"");
  expect_config_error("solver_type", "bh3", "'solver_type' is \"bh3\"");
  expect_config_error("solver_order", 4, "'solver_order' is 4");
  expect_config_error("final_sigmas_type", "max", "'final_sigmas_type' is \"max\"");
  expect_config_error("use_karras_sigmas", true, "'use_karras_sigmas' is true");
  expect_config_error("use_dynamic_shifting", true, "'use_dynamic_shifting' is true");
  expect_config_error("thresholding", true, "'thresholding' is true");
  expect_config_error("flow_shift", "5", "'flow_shift' must be a number, got \"5\"");
  expect_config_error("num_train_timesteps", 1000.5, "'num_train_timesteps' must be an integer");
  expect_config_error("lower_order_final", 1, "'lower_order_final' must be true or false");
  expect_config_error("use_fancy_sigmas", true, "unknown field(s) 'use_fancy_sigmas'");
  expect_config_error("lower_order_final", false, "scheduler_config.json: UniPCMultistepScheduler: lower_order_final");
  EXPECT_THROW(load_scheduler("/nonexistent/scheduler_config.json"), UserError);
  EXPECT_THROW(scheduler_from_json("{", "x.json"), UserError);
}

// The golden data exercises solver_order 2 with bh2 only. Orders 1 and 3 and bh1 are checked for what
// a solver must do: on the smooth stand-in model of make_golden.py, the error at sigma ~0.63 against a
// 1600-step run shrinks when the step count doubles, faster for the higher bh2 orders.
std::vector<double> unipc_run(int order, bool bh2, int steps, int upto, std::vector<double> x) {
  UniPCConfig c;
  c.flow_shift = 5, c.solver_order = order, c.solver_bh2 = bh2;
  UniPCMultistepScheduler s(c);
  s.set_timesteps(steps);
  for (int i = 0; i < upto; ++i) {
    std::vector<double> m(x.size());
    for (std::size_t e = 0; e < x.size(); ++e) m[e] = std::tanh(x[e]) * (1 + s.sigmas()[i]) - 0.3 * x[e];
    x = s.step(m, i, x);
  }
  return x;
}

TEST(Schedulers, UniPCOrdersAndVariantsConverge) {
  SafetensorsFile golden(cases_dir() + "/scheduler_rollouts.safetensors");
  const std::vector<double> x0 = golden.read_f64("unipc_flow5.30.x0");
  for (bool bh2 : {true, false}) {
    const std::vector<double> ref = unipc_run(3, bh2, 1600, 1200, x0);
    for (int order = 1; order <= 3; ++order) {
      const double e16 = rel_l2(unipc_run(order, bh2, 16, 12, x0), ref);
      const double e32 = rel_l2(unipc_run(order, bh2, 32, 24, x0), ref);
      ASSERT_FALSE(std::isnan(e16) || std::isnan(e32)) << "order " << order << ": NaN or Inf";
      // Measured: bh2 gains 3.6x (order 1), 8x and 10x (orders 2, 3) per halving; bh1 3.4x to 5x.
      EXPECT_LT(e32, e16 / 3) << "order " << order << " bh2 " << bh2 << ": errors " << e16 << " -> " << e32;
      if (bh2 && order > 1) {
        EXPECT_LT(e32, e16 / 6) << "order " << order << ": errors " << e16 << " -> " << e32;
        EXPECT_LT(e32, 2e-5) << "order " << order;
      }
    }
  }
}

TEST(Schedulers, FlowMatchEulerConfigErrors) {
  const std::string base = R"({"_class_name": "FlowMatchEulerDiscreteScheduler", "shift": 7.0)";
  EXPECT_NO_THROW(scheduler_from_json(base + "}", "fme.json"));
  for (const std::string extra : {R"(, "stochastic_sampling": true)", R"(, "use_dynamic_shifting": true)",
                                  R"(, "use_beta_sigmas": true)", R"(, "time_shift_type": "cubic")"})
    EXPECT_THROW(scheduler_from_json(base + extra + "}", "fme.json"), UserError) << extra;
}

// A shift of 1e39 or 1e-300 made float32 sigmas of NaN, failing later as "timestep holds NaN" naming no
// file, and 1e30 was taken though --flow-shift refuses it: the config's shift takes the flag's range, at
// load, naming the file and the field, even when the flag overrides it; shift_terminal stays in [0, 1).
TEST(Schedulers, ConfigShiftTakesTheFlowShiftFlagsRange) {
  const nlohmann::json unipc = read_json(scheduler_config_path());
  const nlohmann::json euler = {{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"shift", 7.0}};
  for (const auto& [base, key] : {std::pair{unipc, "flow_shift"}, std::pair{euler, "shift"}}) {
    for (const double bad : {1e39, 1e-300, 1e30, 0.005, 101.0, -1.0, 0.0}) {
      nlohmann::json cfg = base;
      cfg[key] = bad;
      for (const SchedulerOverrides& o : {SchedulerOverrides{}, SchedulerOverrides{5.0}}) {
        try {
          scheduler_from_json(cfg.dump(), "s/scheduler_config.json", o);
          ADD_FAILURE() << key << " " << bad << " was accepted";
        } catch (const UserError& e) {
          const std::string m = e.what();
          EXPECT_NE(m.find("s/scheduler_config.json: field '" + std::string(key) + "' is " + cfg[key].dump()),
                    std::string::npos) << m;
          EXPECT_NE(m.find("from 0.01 to 100"), std::string::npos) << m;
          EXPECT_EQ(m.find('\n'), std::string::npos) << m;
        }
      }
    }
    for (const double ok : {0.01, 100.0}) {
      nlohmann::json cfg = base;
      cfg[key] = ok;
      EXPECT_NO_THROW(scheduler_from_json(cfg.dump(), "s.json")->set_timesteps(4)) << key << " " << ok;
    }
    for (const double bad : {1.0, 1.5, -0.1}) {
      nlohmann::json cfg = base;
      cfg["shift_terminal"] = bad;
      try {
        scheduler_from_json(cfg.dump(), "s.json");
        ADD_FAILURE() << "shift_terminal " << bad << " was accepted";
      } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("s.json: field 'shift_terminal'"), std::string::npos) << e.what();
      }
    }
    nlohmann::json cfg = base;
    cfg["shift_terminal"] = 0.1;
    EXPECT_NO_THROW(scheduler_from_json(cfg.dump(), "s.json"));
  }
}

// A request's steps are bounded by the scheduler's num_train_timesteps (the pipeline checks it): both
// schedulers report the config's value.
TEST(Schedulers, ReportNumTrainTimesteps) {
  nlohmann::json unipc = read_json(scheduler_config_path());
  unipc["num_train_timesteps"] = 50;
  const nlohmann::json euler = {{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"shift", 7.0}, {"num_train_timesteps", 50}};
  for (const nlohmann::json& config : {unipc, euler}) {
    const auto s = scheduler_from_json(config.dump(), "s.json");
    EXPECT_EQ(s->num_train_timesteps(), 50) << config["_class_name"];
    EXPECT_THROW(s->set_timesteps(0), UserError);
  }
  EXPECT_EQ(load_scheduler(scheduler_config_path())->num_train_timesteps(), 1000);
}

}  // namespace

// HunyuanVideo-1.5's pipeline passes sigmas = linspace(1, 0, n + 1)[:-1] to FlowMatchEuler (shift 5):
// the schedule must equal the golden pipeline's scheduler.timesteps / sigmas exactly.
TEST(Schedulers, FlowMatchEulerGivenSigmasMatchTheHunyuanVideo15Pipeline) {
  const std::string dir = dattn::testing::golden_dir() + "/hv15_tiny";
  auto scheduler = dattn::load_scheduler(dir + "/pipeline/scheduler/scheduler_config.json");
  auto* euler = dynamic_cast<dattn::FlowMatchEulerDiscreteScheduler*>(scheduler.get());
  ASSERT_NE(euler, nullptr);
  const dattn::SafetensorsFile f(dir + "/cases/pipeline_t2v.safetensors");
  const auto timesteps = f.read_f64("scheduler.timesteps"), sigmas = f.read_f64("scheduler.sigmas");
  const int n = static_cast<int>(timesteps.size());
  std::vector<double> given;
  for (int i = 0; i < n; ++i) given.push_back(1.0 + i * (-1.0 / n));  // np.linspace(1, 0, n + 1)[:-1]
  euler->set_sigmas(given);
  EXPECT_EQ(euler->timesteps(), timesteps);
  EXPECT_EQ(euler->sigmas(), sigmas);
  EXPECT_THROW(euler->set_sigmas(std::vector<double>{1.5}), dattn::UserError);
  EXPECT_THROW(euler->set_sigmas(std::vector<double>{}), dattn::UserError);
}
