#include "text/pre_tokenizer.h"

#include <string>
#include <utility>
#include <vector>

#include "dattn/core/error.h"
#include "text/byte_level.h"
#include "text/json_file.h"

namespace dattn::text_detail {

namespace {

// The regex ByteLevel splits with when use_regex is true (GPT-2's).
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Isolated split: the matches and the text between them, in order, none empty.
std::vector<std::string> split(std::string_view text, const Regex& re, bool keep_matches) {
  std::vector<std::string> out;
  std::size_t last = 0;
  for (const auto& [b, e] : re.find_all(text)) {
    if (b > last) out.emplace_back(text.substr(last, b - last));
    if (keep_matches) out.emplace_back(text.substr(b, e - b));
    last = e;
  }
  if (last < text.size()) out.emplace_back(text.substr(last));
  return out;
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const nlohmann::json& pre_tokenizer, const std::string& source) {
  PreTokenizer p;
  p.add(pre_tokenizer, source, "pre_tokenizer");
  return p;
}

// `path` names the entry in errors: pre_tokenizer, pre_tokenizer.pretokenizers[1], ... The recursion is as
// deep as the Sequences nest, which parse_json_object_text bounds (kMaxTokenizerJsonDepth).
void PreTokenizer::add(const nlohmann::json& j, const std::string& source, const std::string& path) {
  if (j.is_null()) return;
  const std::string fields = source + ": " + path + ".";  // a field's prefix in errors
  const std::string type = string_field(j, "type", fields).value_or("");
  const std::string where = source + ": " + path + " " + (type.empty() ? short_dump(j) : "\"" + type + "\"");
  if (type == "Sequence" && j.contains("pretokenizers") && j["pretokenizers"].is_array()) {
    const auto& list = j["pretokenizers"];
    for (std::size_t i = 0; i < list.size(); ++i)
      add(list[i], source, path + ".pretokenizers[" + std::to_string(i) + "]");
  } else if (type == "Split") {
    Step s{Step::kSplit, {}, true, false};
    const auto pattern = j.find("pattern");
    if (pattern != j.end() && pattern->contains("Regex") && (*pattern)["Regex"].is_string())
      s.regex.emplace_back((*pattern)["Regex"].get<std::string>(), false, where);
    else if (pattern != j.end() && pattern->contains("String") && (*pattern)["String"].is_string())
      s.regex.emplace_back((*pattern)["String"].get<std::string>(), true, where);
    else
      throw UserError(where + ": pattern must be {\"Regex\": ...} or {\"String\": ...}");
    const std::string behavior = string_field(j, "behavior", fields).value_or("");
    if (behavior != "Isolated" && behavior != "Removed")
      throw UserError(where + ": behavior \"" + behavior + "\" is not implemented; implemented: Isolated, Removed");
    s.keep_matches = behavior == "Isolated";
    if (bool_field(j, "invert", false, fields)) throw UserError(where + ": invert true is not implemented");
    steps_.push_back(std::move(s));
  } else if (type == "ByteLevel") {
    Step s{Step::kByteLevel, {}, true, bool_field(j, "add_prefix_space", true, fields)};
    if (bool_field(j, "use_regex", true, fields)) s.regex.emplace_back(kGpt2Pattern, false, where);
    (void)bool_field(j, "trim_offsets", true, fields);  // changes offsets only, but typed like the others
    steps_.push_back(std::move(s));
  } else {
    throw UserError(where + " is not implemented; implemented: Split, ByteLevel, and a Sequence of them");
  }
}

std::vector<std::string> PreTokenizer::apply(std::string_view text) const {
  std::vector<std::string> pieces{std::string(text)};
  for (const Step& s : steps_) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      if (s.kind == Step::kSplit) {
        for (std::string& p : split(piece, s.regex[0], s.keep_matches)) next.push_back(std::move(p));
        continue;
      }
      // ByteLevel: Hugging Face adds the prefix space to a piece that does not start with one.
      if (s.add_prefix_space && !piece.empty() && piece[0] != ' ') piece.insert(piece.begin(), ' ');
      std::vector<std::string> parts =
          s.regex.empty() ? std::vector<std::string>{piece} : split(piece, s.regex[0], true);
      for (const std::string& p : parts) next.push_back(byte_level_spell(p));
    }
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace dattn::text_detail
