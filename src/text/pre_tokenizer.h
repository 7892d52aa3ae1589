#pragma once
// tokenizer.json's "pre_tokenizer": Split (a regex or string, behavior Isolated or Removed, not
// inverted), ByteLevel (optionally with GPT-2's own split regex and a prefix space), or a Sequence of
// them, applied in order to the pieces of the previous step. Other types are refused naming them.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "text/regex_split.h"

namespace dattn::text_detail {

class PreTokenizer {
 public:
  static PreTokenizer from_json(const nlohmann::json& pre_tokenizer, const std::string& source);
  // The pieces of one segment (valid UTF-8), each handed to the BPE model on its own.
  std::vector<std::string> apply(std::string_view text) const;

 private:
  struct Step {
    enum Kind { kSplit, kByteLevel } kind;
    std::vector<Regex> regex;  // Split's pattern, or ByteLevel's GPT-2 pattern when use_regex (0 or 1 entry)
    bool keep_matches = true;  // Split "Isolated" keeps them, "Removed" drops them
    bool add_prefix_space = false;
  };
  void add(const nlohmann::json& j, const std::string& source, const std::string& path);
  std::vector<Step> steps_;
};

}  // namespace dattn::text_detail
