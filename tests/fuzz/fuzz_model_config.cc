// Fuzzes the readers of a diffusers model directory's JSON: the Wan transformer's and VAE's
// config.json, the umT5 encoder's, and scheduler_config.json. Text that is not JSON is the file reader's
// concern (it refuses it); every JSON value must give a config or a UserError naming the field.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/models/umt5.h"
#include "dattn/models/wan/config.h"
#include "dattn/models/wan_vae.h"
#include "dattn/pipeline/scheduler.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)dattn::scheduler_from_json(text, "fuzz scheduler_config.json");
  } catch (const dattn::UserError&) {
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    (void)dattn::WanTransformerConfig::from_json(j, "fuzz transformer");
  } catch (const dattn::UserError&) {
  }
  try {
    const dattn::WanVaeConfig c = dattn::WanVaeConfig::from_json(j, "fuzz vae");
    (void)dattn::wan_vae_decoder_tensors(c);
  } catch (const dattn::UserError&) {
  }
  try {
    (void)dattn::Umt5Config::from_json(j, "fuzz umt5");
  } catch (const dattn::UserError&) {
  }
  return 0;
}
