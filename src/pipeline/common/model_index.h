#pragma once
// Readers of a diffusers pipeline directory that every family uses: model_index.json, its component
// entries, and the component folders and files, each failure a UserError naming the path.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dattn::pipeline {

// DIR/model_index.json as a JSON object; UserError when DIR or the file is missing or not an object.
nlohmann::json read_model_index(const std::string& dir);
// model_index.json lists a component as ["library", "ClassName"]; the class, or UserError.
std::string component_class(const nlohmann::json& index, const std::string& name, const std::string& source);
// Whether model_index.json names the component with a class ([null, null] or absent: no).
bool has_component(const nlohmann::json& index, const std::string& name);
void require_class(const std::string& got, const std::vector<std::string>& accepted, const std::string& what,
                   const std::string& source);
// The string j[key] of a config file (its class, ...): "" when absent or null, UserError naming `source` when
// it is another type (j.value() threw a JSON type error, which surfaced as dattn's own failure).
std::string optional_string(const nlohmann::json& j, const std::string& key, const std::string& source);
// DIR/NAME as a directory path, or UserError.
std::string require_dir(const std::string& dir, const std::string& name);
void require_file(const std::string& path);
// A component's JSON config file (guider_config.json, ...) as an object, or UserError naming it.
nlohmann::json read_json_object_file(const std::string& path);
// Writing a pipeline directory (make-pipeline): a JSON file, indented; a regular file copied (its folder
// made). UserError naming the path.
void write_json_file(const std::string& path, const nlohmann::json& j);
void copy_into(const std::string& from, const std::string& to);

}  // namespace dattn::pipeline
