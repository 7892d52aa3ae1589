#pragma once
// Reading a tokenizer folder's JSON files with errors that name the file.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace dattn::text_detail {

// The JSON object in `path`; UserError "<path>: missing; <missing_hint>" when absent, and one naming
// the parse error or the wrong top-level type otherwise.
nlohmann::json read_json_object(const std::string& path, const std::string& missing_hint);
// The same for a file that may be absent: nullopt then.
std::optional<nlohmann::json> read_optional_json_object(const std::string& path);
// A token field: a string, or an AddedToken object {"content": ...} as older configs write it.
std::optional<std::string> token_text(const nlohmann::json& v);

}  // namespace dattn::text_detail
