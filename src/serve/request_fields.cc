#include "dattn/serve/request_fields.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "attention/config/config_raw.h"
#include "dattn/core/error.h"
#include "dattn/core/whole_number.h"
#include "dattn/serve/api_error.h"

namespace dattn::serve {
namespace {

std::string range_text(std::int64_t min, std::int64_t max) {
  return "an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

// strtod over the whole text: "12", "1.5", "1e3"; nullopt for anything else, inf or nan.
std::optional<double> parse_number(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

RequestFields RequestFields::from_json(const std::string& body) {
  // The attention config's reader: a key given twice is refused (nlohmann keeps the last in silence, while a
  // form's repeated field is refused), and so is hostile nesting; syntax errors name the parser's position.
  nlohmann::json j;
  try {
    j = config_detail::parse_json_text(body, "the request body");
  } catch (const ConfigError& e) {
    throw bad_field("body", e.what());
  }
  if (!j.is_object()) throw bad_field("body", "the body must be a JSON object");
  return RequestFields(std::move(j), false);
}

RequestFields RequestFields::from_form(const std::vector<std::pair<std::string, std::string>>& fields) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : fields) {
    if (j.contains(name)) throw bad_field(name, "field '" + name + "' is given more than once");
    j[name] = value;
  }
  return RequestFields(std::move(j), true);
}

void RequestFields::allow_only(const std::vector<std::string>& known) const {
  for (const auto& [name, value] : values_.items()) {
    bool ok = false;
    for (const std::string& k : known) ok = ok || k == name;
    if (ok) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    throw bad_field(name, "unknown field '" + name + "'; expected: " + list);
  }
}

const nlohmann::json* RequestFields::find(const std::string& name) const {
  const auto it = values_.find(name);
  // JSON null reads as absent, as OpenAI's clients send unset optional fields.
  return it == values_.end() || it->is_null() ? nullptr : &*it;
}

bool RequestFields::has(const std::string& name) const { return find(name) != nullptr; }

std::optional<std::string> RequestFields::text(const std::string& name) const {
  const nlohmann::json* v = find(name);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw bad_field(name, "'" + name + "' must be a string");
  return v->get<std::string>();
}

std::optional<std::int64_t> RequestFields::integer(const std::string& name, std::int64_t min, std::int64_t max) const {
  const nlohmann::json* v = find(name);
  if (!v) return std::nullopt;
  const auto refuse = [&] { return bad_field(name, "'" + name + "' must be " + range_text(min, max)); };
  if (form_ || v->is_string()) {
    if (!form_) throw refuse();
    const std::string& s = v->get_ref<const std::string&>();
    const bool negative = !s.empty() && s[0] == '-';
    const auto magnitude = parse_whole_number(negative ? std::string_view(s).substr(1) : std::string_view(s),
                                              std::numeric_limits<std::int64_t>::max());
    if (!magnitude) throw refuse();
    const std::int64_t value = negative ? -static_cast<std::int64_t>(*magnitude) : static_cast<std::int64_t>(*magnitude);
    if (value < min || value > max) throw refuse();
    return value;
  }
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    // min too: nlohmann reads every non-negative integer as unsigned, so 0 lands here ("fps": 0).
    if (u > static_cast<std::uint64_t>(max) || (min > 0 && u < static_cast<std::uint64_t>(min))) throw refuse();
    return static_cast<std::int64_t>(u);
  }
  if (!v->is_number_integer()) throw refuse();
  const auto value = v->get<std::int64_t>();
  if (value < min || value > max) throw refuse();
  return value;
}

std::optional<double> RequestFields::number(const std::string& name, bool text_too) const {
  const nlohmann::json* v = find(name);
  if (!v) return std::nullopt;
  std::optional<double> value;
  if ((form_ || text_too) && v->is_string()) value = parse_number(v->get<std::string>());
  else if (v->is_number()) value = v->get<double>();
  if (!value || !std::isfinite(*value)) throw bad_field(name, "'" + name + "' must be a finite number");
  return value;
}

std::optional<std::uint64_t> RequestFields::whole(const std::string& name) const {
  const nlohmann::json* v = find(name);
  if (!v) return std::nullopt;
  const auto max = std::numeric_limits<std::uint64_t>::max();
  std::optional<std::uint64_t> value;
  if (form_ && v->is_string()) value = parse_whole_number(v->get<std::string>(), max);
  else if (v->is_number_unsigned()) value = v->get<std::uint64_t>();
  else if (v->is_number_integer() && v->get<std::int64_t>() >= 0) value = v->get<std::uint64_t>();
  if (!value) throw bad_field(name, "'" + name + "' must be a whole number from 0 to " + std::to_string(max));
  return value;
}

}  // namespace dattn::serve
