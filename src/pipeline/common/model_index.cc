// Readers of a diffusers pipeline directory (see model_index.h).
#include "pipeline/common/model_index.h"

#include <filesystem>
#include <fstream>

#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "dattn/io/json_object.h"

namespace dattn::pipeline {

namespace fs = std::filesystem;
using json = nlohmann::json;

json read_model_index(const std::string& dir) {
  const fs::path path = fs::path(dir) / "model_index.json";
  std::error_code ec;  // a link loop or a name too long is the user's folder: a UserError, not dattn's failure
  if (!fs::is_directory(dir, ec))
    throw UserError("--model '" + dir + "': no such directory" + unusual_path_error(ec));
  refuse_special_file(path.string(), "pipeline index");
  std::ifstream in(path);
  if (!in)
    throw UserError(path.string() + ": not found; --model must be a diffusers pipeline directory "
                                    "(model_index.json, transformer/, vae/, text_encoder/, tokenizer/, scheduler/)");
  in.close();
  return read_json_object(path.string(), "pipeline index");
}

std::string component_class(const json& index, const std::string& name, const std::string& source) {
  if (!index.contains(name)) throw UserError(source + ": component '" + name + "' is missing");
  const json& c = index.at(name);
  if (!c.is_array() || c.size() != 2 || !c[1].is_string())
    throw UserError(source + ": component '" + name + "' must be [library, class], got " + c.dump());
  return c[1].get<std::string>();
}

std::string optional_string(const json& j, const std::string& key, const std::string& source) {
  if (!j.contains(key) || j.at(key).is_null()) return "";
  if (!j.at(key).is_string()) throw UserError(source + ": '" + key + "' must be a string, got " + j.at(key).dump());
  return j.at(key).get<std::string>();
}

bool has_component(const json& index, const std::string& name) {
  return index.contains(name) && index.at(name).is_array() && !index.at(name).empty() && !index.at(name)[0].is_null();
}

void require_class(const std::string& got, const std::vector<std::string>& accepted, const std::string& what,
                   const std::string& source) {
  for (const auto& a : accepted)
    if (got == a) return;
  std::string list;
  for (const auto& a : accepted) list += (list.empty() ? "" : ", ") + a;
  throw UserError(source + ": " + what + " is " + got + "; supported: " + list);
}

std::string require_dir(const std::string& dir, const std::string& name) {
  const fs::path p = fs::path(dir) / name;
  std::error_code ec;
  if (!fs::is_directory(p, ec))
    throw UserError("--model '" + dir + "': component directory '" + name + "/' is missing" +
                    unusual_path_error(ec));
  return p.string();
}

void require_file(const std::string& path) {
  refuse_special_file(path, "pipeline file");
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw UserError(path + ": not found" + unusual_path_error(ec));
}

json read_json_object_file(const std::string& path) {
  return read_json_object(path, "config");
}

void write_json_file(const std::string& path, const json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) throw UserError("cannot write '" + path + "'");
}

void copy_into(const std::string& from, const std::string& to) {
  require_regular_file(from, "file to copy");
  std::error_code ec;
  fs::create_directories(fs::path(to).parent_path(), ec);
  if (!ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) throw UserError("cannot copy '" + from + "' to '" + to + "': " + ec.message());
}

}  // namespace dattn::pipeline
