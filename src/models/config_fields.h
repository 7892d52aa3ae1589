#pragma once
// Typed reading of a model's config.json fields (transformer, text encoder): every error names the
// file, the field, the value found and what was expected. Absent or null fields take the caller's
// fallback, or are an error when the field is required.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"

namespace dattn::models {

class ConfigFields {
 public:
  using json = nlohmann::json;
  ConfigFields(const json& j, const std::string& source) : j_(j), source_(source) {}

  [[noreturn]] void fail(const std::string& key, const std::string& expected) const {
    const std::string got = j_.contains(key) ? j_.at(key).dump() : "nothing (the field is missing)";
    throw UserError(source_ + ": '" + key + "' must be " + expected + ", got " + got);
  }
  bool given(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  std::int64_t positive(const std::string& key, std::optional<std::int64_t> fallback = std::nullopt) const {
    if (!given(key)) {
      if (fallback) return *fallback;
      fail(key, "a positive integer (required)");
    }
    const json& v = j_.at(key);
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > (1LL << 31))
      fail(key, "a positive integer");
    return v.get<std::int64_t>();
  }
  double number(const std::string& key, double fallback) const {
    if (!given(key)) return fallback;
    if (!j_.at(key).is_number()) fail(key, "a number");
    return j_.at(key).get<double>();
  }
  double positive_number(const std::string& key, double fallback) const {
    if (!given(key)) return fallback;
    if (!j_.at(key).is_number() || !(j_.at(key).get<double>() > 0)) fail(key, "a positive number");
    return j_.at(key).get<double>();
  }
  bool boolean(const std::string& key, bool fallback) const {
    if (!given(key)) return fallback;
    if (!j_.at(key).is_boolean()) fail(key, "true or false");
    return j_.at(key).get<bool>();
  }
  std::optional<std::string> text(const std::string& key) const {
    if (!given(key)) return std::nullopt;
    if (!j_.at(key).is_string()) fail(key, "a string");
    return j_.at(key).get<std::string>();
  }
  // A required list of 3 positive integers (a patch size: t, h, w).
  std::array<std::int64_t, 3> triple(const std::string& key) const {
    const json* v = given(key) ? &j_.at(key) : nullptr;
    const std::string what = "a list of 3 positive integers (t, h, w)";
    if (!v || !v->is_array() || v->size() != 3) fail(key, what + (v ? "" : " (required)"));
    std::array<std::int64_t, 3> out{};
    for (int i = 0; i < 3; ++i) {
      const json& e = (*v)[i];
      if (!e.is_number_integer() || e.get<long long>() < 1 || e.get<long long>() > 64) fail(key, what);
      out[i] = e.get<std::int64_t>();
    }
    return out;
  }
  // A field whose non-null value selects something dattn does not support.
  void must_be_null(const std::string& key, const std::string& why) const {
    if (given(key)) throw UserError(source_ + ": '" + key + "' is " + j_.at(key).dump() + ": " + why);
  }

 private:
  const json& j_;
  const std::string& source_;
};

}  // namespace dattn::models
