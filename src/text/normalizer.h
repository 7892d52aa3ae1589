#pragma once
// tokenizer.json's "normalizer": null, {"type": "NFC"}, or a Sequence of those. Any other type is refused
// when the file is read, naming it and the file.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace dattn::text_detail {

class Normalizer {
 public:
  static Normalizer from_json(const nlohmann::json& normalizer, const std::string& source);
  bool is_identity() const { return !nfc_; }
  std::string apply(std::string_view text) const;  // `text` is valid UTF-8

 private:
  bool nfc_ = false;
};

}  // namespace dattn::text_detail
