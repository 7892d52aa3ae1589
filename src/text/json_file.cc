#include "text/json_file.h"

#include <filesystem>
#include <fstream>

#include "dattn/core/error.h"
#include "dattn/core/files.h"

namespace dattn::text_detail {

namespace {

nlohmann::json parse_object(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot be opened for reading");
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    if (!j.is_object()) throw UserError(path + ": expected a JSON object at the top level");
    return j;
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a huge number
    throw UserError(path + ": not valid JSON: " + e.what());
  }
}

}  // namespace

nlohmann::json read_json_object(const std::string& path, const std::string& missing_hint) {
  refuse_special_file(path, "tokenizer file");
  if (!std::filesystem::exists(path)) throw UserError(path + ": missing; " + missing_hint);
  return parse_object(path);
}

std::optional<nlohmann::json> read_optional_json_object(const std::string& path) {
  refuse_special_file(path, "tokenizer file");
  if (!std::filesystem::exists(path)) return std::nullopt;
  return parse_object(path);
}

std::optional<std::string> token_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

}  // namespace dattn::text_detail
