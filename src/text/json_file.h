#pragma once
// Reading a tokenizer folder's JSON files with errors that name the file, and typed fields of them.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace dattn::text_detail {

// The deepest nesting a tokenizer file may have. Real files need about 6 levels; the parser is iterative,
// but copying, printing or walking a parsed tree recurses once a level, so 30,000 nested Sequence
// normalizers overflowed the stack. Refused while parsing, before any of that runs.
inline constexpr int kMaxTokenizerJsonDepth = 64;

// `text` parsed as a JSON object; UserError "<source>: ..." for a parse error, another top-level type or
// nesting past kMaxTokenizerJsonDepth.
nlohmann::json parse_json_object_text(const std::string& text, const std::string& source);
// The JSON object in `path`; UserError "<path>: missing; <missing_hint>" when absent, and one naming
// the parse error or the wrong top-level type otherwise.
nlohmann::json read_json_object(const std::string& path, const std::string& missing_hint);
// The same for a file that may be absent: nullopt then.
std::optional<nlohmann::json> read_optional_json_object(const std::string& path);
// A token field: a string, or an AddedToken object {"content": ...} as older configs write it.
std::optional<std::string> token_text(const nlohmann::json& v);

// Typed fields of the object `j` (any other value has no fields). `where` prefixes the field's name in an
// error: "file: model." gives "file: model.ignore_merges is 0, of the wrong type; expected true or false".
// A value of another type is an error rather than the default: `add_prefix_space: 0` was read as true.
// A flag that is null is wrong too (Hugging Face's serde refuses it); the optional ones take null as absent.
bool bool_field(const nlohmann::json& j, const char* key, bool fallback, const std::string& where);
std::optional<std::string> string_field(const nlohmann::json& j, const char* key, const std::string& where);
std::optional<std::int64_t> integer_field(const nlohmann::json& j, const char* key, const std::string& where);
std::optional<double> number_field(const nlohmann::json& j, const char* key, const std::string& where);
// `v` printed for an error message: on one line, cut after 80 characters.
std::string short_dump(const nlohmann::json& v);

}  // namespace dattn::text_detail
