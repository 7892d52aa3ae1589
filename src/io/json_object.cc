#include "dattn/io/json_object.h"

#include <fstream>
#include <sstream>

#include "dattn/core/error.h"
#include "dattn/core/files.h"

namespace dattn {

nlohmann::json parse_json_object(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number past double's range
    throw UserError(source + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw UserError(source + ": not a JSON object (got " + std::string(j.type_name()) + ")");
  return j;
}

nlohmann::json read_json_object(const std::string& path, const std::string& what) {
  refuse_special_file(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open (" + what + ")");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_json_object(text.str(), path);
}

}  // namespace dattn
