#pragma once
// Typed reading of a model's config.json fields (transformer, text encoder): every error names the
// file, the field, the value found and what was expected. Absent or null fields take the caller's
// fallback, or are an error when the field is required.
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"

namespace dattn::models {

// The numbers a pipeline scales the latents by before decoding (scaling_factor, latents_std): the value and
// its reciprocal stay finite and normal in float32 and far from overflowing the latents. Real VAEs use 0.18
// to 3.3 (a scaling_factor of 1e-45 made a video of Inf that was blamed on the VAE's weights).
inline constexpr double kMinLatentScale = 1e-4, kMaxLatentScale = 1e4;
// The offsets added to them (latents_mean): real VAEs use magnitudes below 2.
inline constexpr double kMaxLatentOffset = 1e4;

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
  // A number from lo to hi (NaN and anything outside refused); `what` names the kind of number.
  double number_in(const std::string& key, double fallback, double lo, double hi, const std::string& what) const {
    if (!given(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi)) fail(key, what + " " + range(lo, hi));
    return v.get<double>();
  }
  // A required list of `count` numbers, each from lo to hi; an error names the first bad entry.
  std::vector<double> number_list_in(const std::string& key, std::size_t count, double lo, double hi,
                                     const std::string& what) const {
    const std::string expected =
        "a list of " + std::to_string(count) + " numbers, each " + (what.empty() ? "" : what + " ") + range(lo, hi);
    if (!given(key) || !j_.at(key).is_array() || j_.at(key).size() != count) fail(key, expected);
    std::vector<double> out;
    for (const json& e : j_.at(key)) {
      if (!e.is_number() || !(e.get<double>() >= lo && e.get<double>() <= hi))
        throw UserError(source_ + ": '" + key + "' must be " + expected + ", got " + e.dump() + " at index " +
                        std::to_string(out.size()));
      out.push_back(e.get<double>());
    }
    return out;
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
  static std::string range(double lo, double hi) {
    char text[64];
    std::snprintf(text, sizeof text, "from %g to %g", lo, hi);
    return text;
  }
  const json& j_;
  const std::string& source_;
};

}  // namespace dattn::models
