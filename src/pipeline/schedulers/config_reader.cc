#include "pipeline/schedulers/config_reader.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "dattn/core/error.h"

namespace dattn::sched {

using nlohmann::json;

ConfigReader::ConfigReader(const json& json, std::string source) : json_(json), source_(std::move(source)) {}

void ConfigReader::fail(const std::string& key, const std::string& what) const {
  throw UserError(source_ + ": field '" + key + "' " + what);
}

std::string ConfigReader::shown(const std::string& key) const {
  auto it = json_.find(key);
  return it == json_.end() ? "missing" : it->dump();
}

bool ConfigReader::has(const std::string& key) const {
  auto it = json_.find(key);
  return it != json_.end() && !it->is_null();
}

const json* ConfigReader::find(const std::string& key) {
  read_.insert(key);
  auto it = json_.find(key);
  return it == json_.end() || it->is_null() ? nullptr : &*it;
}

std::optional<double> ConfigReader::optional_number(const std::string& key) {
  const json* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>())) fail(key, "must be a number, got " + v->dump());
  return v->get<double>();
}

double ConfigReader::number(const std::string& key, double fallback) {
  return optional_number(key).value_or(fallback);
}

double ConfigReader::number_in(const std::string& key, double fallback, double lo, double hi, const std::string& why) {
  const double v = number(key, fallback);
  if (!(v >= lo && v <= hi)) {
    char range[64];
    std::snprintf(range, sizeof range, "from %g to %g", lo, hi);
    fail(key, "is " + shown(key) + ": expected a number " + range + " (" + why + ")");
  }
  return v;
}

int ConfigReader::integer(const std::string& key, int fallback) {
  const json* v = find(key);
  if (!v) return fallback;
  // 1000.0 is accepted as 1000; 2.5 is not.
  if (!v->is_number() || std::trunc(v->get<double>()) != v->get<double>() ||
      std::fabs(v->get<double>()) > std::numeric_limits<int>::max())
    fail(key, "must be an integer, got " + v->dump());
  return static_cast<int>(v->get<double>());
}

bool ConfigReader::boolean(const std::string& key, bool fallback) {
  const json* v = find(key);
  if (!v) return fallback;
  if (!v->is_boolean()) fail(key, "must be true or false, got " + v->dump());
  return v->get<bool>();
}

std::string ConfigReader::string(const std::string& key, const std::string& fallback) {
  const json* v = find(key);
  if (!v) return fallback;
  if (!v->is_string()) fail(key, "must be a string, got " + v->dump());
  return v->get<std::string>();
}

std::vector<int> ConfigReader::int_list(const std::string& key) {
  const json* v = find(key);
  std::vector<int> out;
  if (!v) return out;
  if (!v->is_array()) fail(key, "must be a list of integers, got " + v->dump());
  for (const json& e : *v) {
    if (!e.is_number_integer()) fail(key, "must be a list of integers, got " + v->dump());
    out.push_back(e.get<int>());
  }
  return out;
}

void ConfigReader::ignore(const std::string& key) { read_.insert(key); }

void ConfigReader::reject_unknown(const std::string& class_name) const {
  std::string unknown;
  for (const auto& [key, _] : json_.items())
    if (!key.empty() && key[0] != '_' && !read_.count(key)) unknown += (unknown.empty() ? "'" : ", '") + key + "'";
  if (!unknown.empty())
    throw UserError(source_ + ": unknown field(s) " + unknown + " for " + class_name +
                    ": this diffusers option is not implemented by dattn, so the result could differ; remove it "
                    "if it has no effect");
}

}  // namespace dattn::sched
