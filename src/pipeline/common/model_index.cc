// Readers of a diffusers pipeline directory (see model_index.h).
#include "pipeline/common/model_index.h"

#include <filesystem>
#include <fstream>

#include "dattn/core/error.h"
#include "dattn/core/files.h"

namespace dattn::pipeline {

namespace fs = std::filesystem;
using json = nlohmann::json;

json read_model_index(const std::string& dir) {
  const fs::path path = fs::path(dir) / "model_index.json";
  if (!fs::is_directory(dir)) throw UserError("--model '" + dir + "': no such directory");
  refuse_special_file(path.string(), "pipeline index");
  std::ifstream in(path);
  if (!in)
    throw UserError(path.string() + ": not found; --model must be a diffusers pipeline directory "
                                    "(model_index.json, transformer/, vae/, text_encoder/, tokenizer/, scheduler/)");
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw UserError(path.string() + ": not a JSON object");
  return j;
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
  if (!fs::is_directory(p)) throw UserError("--model '" + dir + "': component directory '" + name + "/' is missing");
  return p.string();
}

void require_file(const std::string& path) {
  refuse_special_file(path, "pipeline file");
  if (!fs::is_regular_file(path)) throw UserError(path + ": not found");
}

json read_json_object_file(const std::string& path) {
  refuse_special_file(path, "config");
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot open");
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw UserError(path + ": not a JSON object");
  return j;
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
