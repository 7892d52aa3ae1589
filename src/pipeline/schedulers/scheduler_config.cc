// scheduler_config.json -> a scheduler. Every field diffusers knows is read: the ones that change the
// result are either implemented or rejected with the value that would select an unimplemented path;
// the ones that cannot change it with flow sigmas (betas, timestep spacing) only have their type checked.
#include <fstream>
#include <set>
#include <sstream>

#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "dattn/pipeline/flow_match_euler_scheduler.h"
#include "dattn/pipeline/scheduler.h"
#include "dattn/pipeline/unipc_scheduler.h"
#include "pipeline/common/request_checks.h"
#include "pipeline/schedulers/config_reader.h"

namespace dattn {
namespace {

using sched::ConfigReader;

void require_value(ConfigReader& r, const std::string& key, bool ok, const std::string& expected) {
  if (!ok) r.fail(key, "is " + r.shown(key) + ": only " + expected + " is implemented");
}

void require_one_of(ConfigReader& r, const std::string& key, const std::string& value,
                    const std::set<std::string>& allowed) {
  if (allowed.count(value)) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "\"" : ", \"") + a + "\"";
  r.fail(key, "is \"" + value + "\": expected one of " + list);
}

// Options of both classes that select sigma schedules we do not implement.
void reject_sigma_variants(ConfigReader& r) {
  for (const char* key : {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas"})
    require_value(r, key, !r.boolean(key, false), "false");
  require_value(r, "use_dynamic_shifting", !r.boolean("use_dynamic_shifting", false),
                "false (dynamic shifting needs the pipeline's mu)");
}

// The config's flow shift takes the --flow-shift range, checked even when the flag overrides it: 1e39 and
// 1e-300 made float32 sigmas of NaN that failed later as "timestep holds NaN", naming no file.
double read_shift(ConfigReader& r, const std::string& key, const SchedulerOverrides& overrides) {
  const double configured = r.number_in(key, 1.0, pipeline::kMinFlowShift, pipeline::kMaxFlowShift,
                                        "the --flow-shift range; models use 1 to 17");
  return overrides.flow_shift.value_or(configured);
}

// The sigma the schedule is stretched to end at (0 or null: off); 1 or more left no schedule, below 0
// gave negative sigmas.
std::optional<double> read_shift_terminal(ConfigReader& r) {
  const std::optional<double> v = r.optional_number("shift_terminal");
  if (v && !(*v >= 0 && *v < 1))
    r.fail("shift_terminal", "is " + r.shown("shift_terminal") + ": expected null, 0 (off) or a last sigma in (0, 1)");
  return v;
}

std::unique_ptr<Scheduler> make_unipc(ConfigReader& r, const SchedulerOverrides& overrides) {
  UniPCConfig c;
  c.num_train_timesteps = r.integer("num_train_timesteps", 1000);
  require_value(r, "use_flow_sigmas", r.boolean("use_flow_sigmas", false), "true (flow sigmas)");
  require_value(r, "prediction_type", r.string("prediction_type", "epsilon") == "flow_prediction",
                "\"flow_prediction\"");
  require_value(r, "predict_x0", r.boolean("predict_x0", true), "true");
  require_value(r, "thresholding", !r.boolean("thresholding", false), "false");
  require_value(r, "solver_p", !r.has("solver_p"), "null");
  r.ignore("solver_p");
  reject_sigma_variants(r);
  c.solver_order = r.integer("solver_order", 2);
  if (c.solver_order < 1 || c.solver_order > 3) r.fail("solver_order", "is " + r.shown("solver_order") + ": expected 1, 2 or 3");
  // diffusers maps the older names midpoint, heun and logrho to bh2.
  const std::string solver_type = r.string("solver_type", "bh2");
  require_one_of(r, "solver_type", solver_type, {"bh1", "bh2", "midpoint", "heun", "logrho"});
  c.solver_bh2 = solver_type != "bh1";
  c.lower_order_final = r.boolean("lower_order_final", true);
  for (int i : r.int_list("disable_corrector")) c.disable_corrector.insert(i);
  c.flow_shift = read_shift(r, "flow_shift", overrides);
  c.shift_terminal = read_shift_terminal(r);
  const std::string final_type = r.string("final_sigmas_type", "zero");
  require_one_of(r, "final_sigmas_type", final_type, {"zero", "sigma_min"});
  c.final_sigma_zero = final_type == "zero";
  // Fields without effect with flow sigmas: checked for type and the values diffusers accepts.
  require_one_of(r, "timestep_spacing", r.string("timestep_spacing", "linspace"), {"linspace", "leading", "trailing"});
  require_one_of(r, "beta_schedule", r.string("beta_schedule", "linear"), {"linear", "scaled_linear", "squaredcos_cap_v2"});
  require_one_of(r, "time_shift_type", r.string("time_shift_type", "exponential"), {"exponential"});
  r.number("beta_start", 0.0001);
  r.number("beta_end", 0.02);
  r.number("dynamic_thresholding_ratio", 0.995);
  r.number("sample_max_value", 1.0);
  r.optional_number("sigma_min");
  r.optional_number("sigma_max");
  r.integer("steps_offset", 0);
  r.boolean("rescale_betas_zero_snr", false);
  r.ignore("trained_betas");
  r.reject_unknown("UniPCMultistepScheduler");
  try {
    return std::make_unique<UniPCMultistepScheduler>(c);
  } catch (const UserError& e) {
    throw UserError(r.source() + ": " + e.what());
  }
}

std::unique_ptr<Scheduler> make_flow_match_euler(ConfigReader& r, const SchedulerOverrides& overrides) {
  FlowMatchEulerConfig c;
  c.num_train_timesteps = r.integer("num_train_timesteps", 1000);
  c.shift = read_shift(r, "shift", overrides);
  c.shift_terminal = read_shift_terminal(r);
  c.invert_sigmas = r.boolean("invert_sigmas", false);
  reject_sigma_variants(r);
  require_value(r, "stochastic_sampling", !r.boolean("stochastic_sampling", false), "false");
  require_one_of(r, "time_shift_type", r.string("time_shift_type", "exponential"), {"exponential", "linear"});
  // Parameters of dynamic shifting, which is rejected above.
  r.optional_number("base_shift");
  r.optional_number("max_shift");
  r.integer("base_image_seq_len", 256);
  r.integer("max_image_seq_len", 4096);
  r.reject_unknown("FlowMatchEulerDiscreteScheduler");
  try {
    return std::make_unique<FlowMatchEulerDiscreteScheduler>(c);
  } catch (const UserError& e) {
    throw UserError(r.source() + ": " + e.what());
  }
}

}  // namespace

std::unique_ptr<Scheduler> scheduler_from_json(const std::string& json_text, const std::string& source,
                                               const SchedulerOverrides& overrides) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a huge number
    throw UserError(source + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw UserError(source + ": expected a JSON object, got " + std::string(j.type_name()));
  auto cls = j.find("_class_name");
  if (cls == j.end() || !cls->is_string())
    throw UserError(source + ": field '_class_name' is " + (cls == j.end() ? std::string("missing") : cls->dump()) +
                    ": expected the scheduler class name, e.g. \"UniPCMultistepScheduler\"");
  ConfigReader r(j, source);
  const std::string name = cls->get<std::string>();
  if (name == "UniPCMultistepScheduler") return make_unipc(r, overrides);
  if (name == "FlowMatchEulerDiscreteScheduler") return make_flow_match_euler(r, overrides);
  throw UserError(source + ": scheduler class \"" + name +
                  "\" is not implemented: expected \"UniPCMultistepScheduler\" or \"FlowMatchEulerDiscreteScheduler\"");
}

std::unique_ptr<Scheduler> load_scheduler(const std::string& config_path, const SchedulerOverrides& overrides) {
  refuse_special_file(config_path, "scheduler config");
  std::ifstream in(config_path);
  if (!in) throw UserError(config_path + ": cannot open the scheduler config (a diffusers scheduler_config.json)");
  std::stringstream text;
  text << in.rdbuf();
  return scheduler_from_json(text.str(), config_path, overrides);
}

}  // namespace dattn
