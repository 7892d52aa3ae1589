// Loading parameters by manifest (see param_loading.h).
#include "models/param_loading.h"

#include <set>

#include "dattn/core/error.h"

namespace dattn::models {
namespace {

std::string name_list(const std::vector<std::string>& names) {
  std::string s;  // built with += throughout: GCC 12 warns falsely (-Wrestrict) on "literal" + temporary
  for (std::size_t i = 0; i < names.size() && i < 8; ++i) (s += i ? ", " : "") += names[i];
  if (names.size() > 8) ((s += ", ... (") += std::to_string(names.size() - 8)) += " more)";
  return s;
}

void check_names(const WeightStore& store, const std::vector<ParamSpec>& manifest, const ParamLoadOptions& o) {
  std::set<std::string> expected;
  std::vector<std::string> missing, unexpected;
  for (const auto& p : manifest) {
    expected.insert(p.name);
    if (!store.contains(p.name)) missing.push_back(p.name);
  }
  for (const auto& n : store.names())
    if (!expected.count(n) && !(o.ignored && o.ignored(n))) unexpected.push_back(n);
  if (missing.empty() && unexpected.empty()) return;
  std::string msg = store.source() + ": the weights do not match config.json (" + o.model_class + "):";
  if (!missing.empty()) (((msg += ' ') += std::to_string(missing.size())) += " missing: ") += name_list(missing) + ";";
  if (!unexpected.empty())
    (((msg += ' ') += std::to_string(unexpected.size())) += " unexpected: ") += name_list(unexpected) + ";";
  msg += " is config.json the one these weights were saved with?";
  throw UserError(msg);
}

}  // namespace

std::map<std::string, Tensor> load_params(WeightStore& store, const std::vector<ParamSpec>& manifest,
                                          const ParamLoadOptions& options) {
  check_names(store, manifest, options);
  std::map<std::string, Tensor> t;
  for (const auto& p : manifest) {
    const DType dtype = p.keep_fp32 ? DType::F32 : options.dtype;
    const std::optional<TensorSlice> part = options.slice ? options.slice(p.name) : std::nullopt;
    t[p.name] = part ? store.take(p.name, dtype, options.device, p.shape, *part)
                     : store.take(p.name, dtype, options.device, p.shape);
  }
  return t;
}

}  // namespace dattn::models
