#pragma once
// A JSON object read from a model folder's file (config.json, model_index.json, an index), with errors that
// name the file and say what is wrong: the parser's position for a syntax error, or the top-level type.
#include <string>

#include <nlohmann/json.hpp>

namespace dattn {

// `text` as a JSON object; UserError "SOURCE: not valid JSON: ..." or "SOURCE: not a JSON object (got an array)".
nlohmann::json parse_json_object(const std::string& text, const std::string& source);
// The file at `path` (a regular file, checked) as a JSON object, as parse_json_object.
nlohmann::json read_json_object(const std::string& path, const std::string& what);

}  // namespace dattn
