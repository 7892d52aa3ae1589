#pragma once
// The fields of a request body, typed: a JSON object (application/json) or a form's text values
// (multipart/form-data, as vLLM-Omni's clients send), read the same way. Every refusal is a 400 ApiError
// naming the field.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dattn::serve {

class RequestFields {
 public:
  // Throws ApiError 400 when the body is not one JSON object.
  static RequestFields from_json(const std::string& body);
  // A form's fields; a name given twice is refused.
  static RequestFields from_form(const std::vector<std::pair<std::string, std::string>>& fields);

  // Refuses a field whose name is not in `known` (a misspelt field must not be silently ignored).
  void allow_only(const std::vector<std::string>& known) const;
  bool has(const std::string& name) const;
  std::optional<std::string> text(const std::string& name) const;
  // An integer in [min, max]; a JSON number with a fraction, or text that is not one, is refused.
  std::optional<std::int64_t> integer(const std::string& name, std::int64_t min, std::int64_t max) const;
  // A finite number; `text_too`: also a JSON string holding one (OpenAI's "seconds": "4").
  std::optional<double> number(const std::string& name, bool text_too = false) const;
  std::optional<std::uint64_t> whole(const std::string& name) const;  // 0 to 2^64-1 (seeds)

 private:
  RequestFields(nlohmann::json values, bool form) : values_(std::move(values)), form_(form) {}
  const nlohmann::json* find(const std::string& name) const;
  nlohmann::json values_;
  bool form_;  // values are text, converted on reading
};

}  // namespace dattn::serve
