#include "text/normalizer.h"

#include "dattn/core/error.h"
#include "text/nfc.h"

namespace dattn::text_detail {

namespace {

void add(Normalizer& n, bool& nfc, const nlohmann::json& j, const std::string& source) {
  if (j.is_null()) return;
  const std::string type =
      j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
  if (type == "NFC") {
    nfc = true;
  } else if (type == "Sequence" && j.contains("normalizers") && j["normalizers"].is_array()) {
    for (const auto& e : j["normalizers"]) add(n, nfc, e, source);
  } else {
    throw UserError(source + ": normalizer " + (type.empty() ? j.dump() : "type \"" + type + "\"") +
                    " is not implemented; implemented: null, NFC, and a Sequence of them");
  }
}

}  // namespace

Normalizer Normalizer::from_json(const nlohmann::json& normalizer, const std::string& source) {
  Normalizer n;
  add(n, n.nfc_, normalizer, source);
  return n;
}

std::string Normalizer::apply(std::string_view text) const { return nfc_ ? nfc(text) : std::string(text); }

}  // namespace dattn::text_detail
