#include "dattn/attention/backend.h"

#include <cmath>
#include <set>
#include <string>

#include "dattn/core/error.h"

namespace dattn {
namespace {

using nlohmann::json;

bool type_matches(ExtraKey::Type t, const json& v) {
  switch (t) {
    case ExtraKey::Type::Integer:
      // 128.0 from a JSON writer is still the integer 128.
      return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    case ExtraKey::Type::Number: return v.is_number();
    case ExtraKey::Type::Boolean: return v.is_boolean();
    case ExtraKey::Type::String: return v.is_string();
  }
  return false;
}

std::string key_list(const std::vector<ExtraKey>& keys) {
  std::string s;
  for (const auto& k : keys) s += (s.empty() ? "" : ", ") + k.name;
  return s;
}

// "an integer", "a number".
std::string with_article(std::string_view noun) {
  const bool vowel = !noun.empty() && std::string_view("aeiou").find(noun.front()) != std::string_view::npos;
  return (vowel ? "an " : "a ") + std::string(noun);
}

}  // namespace

std::string_view extra_type_name(ExtraKey::Type t) {
  switch (t) {
    case ExtraKey::Type::Integer: return "integer";
    case ExtraKey::Type::Number: return "number";
    case ExtraKey::Type::Boolean: return "bool";
    case ExtraKey::Type::String: return "string";
  }
  return "?";
}

void validate_extra(const AttentionBackend& backend, const json& extra, std::string_view where) {
  const std::string name(backend.name());
  if (!extra.is_object())
    throw ConfigError("extra for " + std::string(where) + " must be a JSON object, got " + extra.dump());
  const auto keys = backend.extra_keys();
  for (const auto& [key, value] : extra.items()) {
    const ExtraKey* spec = nullptr;
    for (const auto& k : keys)
      if (k.name == key) spec = &k;
    if (!spec) {
      throw ConfigError("Unknown extra key '" + key + "' for backend " + name + " (" + std::string(where) + "); " +
                        (keys.empty() ? name + " accepts no extra keys"
                                      : "accepted keys: " + key_list(keys)));
    }
    if (!type_matches(spec->type, value))
      throw ConfigError("Invalid extra '" + key + "' for backend " + name + " (" + std::string(where) + "): " +
                        value.dump() + " is not " + with_article(extra_type_name(spec->type)) +
                        "; expected " + spec->range);
    if (spec->check) {
      if (auto err = spec->check(value))
        throw ConfigError("Invalid extra '" + key + "' for backend " + name + " (" + std::string(where) +
                          "): " + value.dump() + " " + *err);
    }
  }
}

json extra_with_defaults(const AttentionBackend& backend, const json& extra) {
  json out = extra.is_object() ? extra : json::object();
  for (const auto& k : backend.extra_keys())
    if (!out.contains(k.name) && !k.default_value.is_null()) out[k.name] = k.default_value;
  return out;
}

void run_attention(const AttentionBackend& backend, const AttentionProblem& problem, const json& extra,
                   Device device) {
  problem.validate();
  const Support s = backend.supports(problem.shape, device);
  if (!s.ok)
    throw UserError(std::string(backend.name()) + " cannot run " + problem.shape.describe() + " on " +
                    std::string(device_name(device)) + ": " + s.reason);
  backend.run(problem, extra, device);
}

}  // namespace dattn
