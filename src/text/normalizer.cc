#include "text/normalizer.h"

#include "dattn/core/error.h"
#include "text/json_file.h"
#include "text/nfc.h"

namespace dattn::text_detail {

namespace {

// `path` names the entry in errors: normalizer, normalizer.normalizers[2], ... The recursion is as deep as
// the Sequences nest, which parse_json_object_text bounds (kMaxTokenizerJsonDepth).
void add(bool& nfc, const nlohmann::json& j, const std::string& source, const std::string& path) {
  if (j.is_null()) return;
  const std::string type = string_field(j, "type", source + ": " + path + ".").value_or("");
  if (type == "NFC") {
    nfc = true;
  } else if (type == "Sequence" && j.contains("normalizers") && j["normalizers"].is_array()) {
    const auto& list = j["normalizers"];
    for (std::size_t i = 0; i < list.size(); ++i)
      add(nfc, list[i], source, path + ".normalizers[" + std::to_string(i) + "]");
  } else {
    throw UserError(source + ": " + path + " " + (type.empty() ? short_dump(j) : "type \"" + type + "\"") +
                    " is not implemented; implemented: null, NFC, and a Sequence of them");
  }
}

}  // namespace

Normalizer Normalizer::from_json(const nlohmann::json& normalizer, const std::string& source) {
  Normalizer n;
  add(n.nfc_, normalizer, source, "normalizer");
  return n;
}

std::string Normalizer::apply(std::string_view text) const { return nfc_ ? nfc(text) : std::string(text); }

}  // namespace dattn::text_detail
