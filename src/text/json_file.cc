#include "text/json_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dattn/core/error.h"
#include "dattn/core/files.h"

namespace dattn::text_detail {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot be opened for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

[[noreturn]] void wrong_type(const nlohmann::json& v, const char* key, const std::string& where, const char* expected) {
  throw UserError(where + key + " is " + short_dump(v) + ", of the wrong type; expected " + expected);
}

}  // namespace

nlohmann::json parse_json_object_text(const std::string& text, const std::string& source) {
  // depth counts the enclosing levels: the top-level object is at 0.
  const nlohmann::json::parser_callback_t depth_limit = [&source](int depth, nlohmann::json::parse_event_t event,
                                                                    nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
        depth >= kMaxTokenizerJsonDepth)
      throw UserError(source + ": nests deeper than " + std::to_string(kMaxTokenizerJsonDepth) +
                      " levels of objects and lists (a tokenizer file needs about 6)");
    return true;
  };
  try {
    nlohmann::json j = nlohmann::json::parse(text, depth_limit);
    if (!j.is_object()) throw UserError(source + ": expected a JSON object at the top level");
    return j;
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a huge number
    throw UserError(source + ": not valid JSON: " + e.what());
  }
}

nlohmann::json read_json_object(const std::string& path, const std::string& missing_hint) {
  refuse_special_file(path, "tokenizer file");
  if (!std::filesystem::exists(path)) throw UserError(path + ": missing; " + missing_hint);
  return parse_json_object_text(read_text(path), path);
}

std::optional<nlohmann::json> read_optional_json_object(const std::string& path) {
  refuse_special_file(path, "tokenizer file");
  if (!std::filesystem::exists(path)) return std::nullopt;
  return parse_json_object_text(read_text(path), path);
}

std::optional<std::string> token_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

bool bool_field(const nlohmann::json& j, const char* key, bool fallback, const std::string& where) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (!it->is_boolean()) wrong_type(*it, key, where, "true or false");
  return it->get<bool>();
}

std::optional<std::string> string_field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) wrong_type(*it, key, where, "a string");
  return it->get<std::string>();
}

std::optional<std::int64_t> integer_field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  // An unsigned value past int64's range would wrap negative in get<std::int64_t>().
  if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<std::uint64_t>() > INT64_MAX))
    wrong_type(*it, key, where, "a whole number");
  return it->get<std::int64_t>();
}

std::optional<double> number_field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) wrong_type(*it, key, where, "a number");
  return it->get<double>();
}

std::string short_dump(const nlohmann::json& v) {
  // dump() escapes control characters, so the text is one line; replace keeps invalid UTF-8 from throwing.
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 80) {
    std::size_t cut = 77;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    s = s.substr(0, cut) + "...";
  }
  return s;
}

}  // namespace dattn::text_detail
