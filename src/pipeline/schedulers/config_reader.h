#pragma once
// Typed access to the fields of a diffusers config.json, with errors that name the file, the field,
// the value found and what was expected. A field that is absent or null takes the caller's default,
// as diffusers' constructor defaults do.
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dattn::sched {

class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& json, std::string source);

  bool has(const std::string& key) const;  // present and not null
  double number(const std::string& key, double fallback);
  std::optional<double> optional_number(const std::string& key);
  // A number from lo to hi, or the fallback when absent; out of range names the range and `why`.
  double number_in(const std::string& key, double fallback, double lo, double hi, const std::string& why);
  int integer(const std::string& key, int fallback);
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key, const std::string& fallback);
  std::vector<int> int_list(const std::string& key);
  // A field read only to check its type; its value does not change the result.
  void ignore(const std::string& key);
  // Keys not read (other than "_..." metadata keys) are unknown: the error lists them.
  void reject_unknown(const std::string& class_name) const;

  // Throws UserError "<source>: field 'key' <what>".
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  const std::string& source() const { return source_; }
  // The value as JSON text for messages ("missing" when absent).
  std::string shown(const std::string& key) const;

 private:
  const nlohmann::json* find(const std::string& key);
  const nlohmann::json& json_;
  std::string source_;
  std::set<std::string> read_;
};

}  // namespace dattn::sched
