// Fuzzes `dattn serve`'s request reading on arbitrary bytes: the first byte picks a JSON body or form
// fields ("name=value" lines), which are read as a video and as an image request against the tiny
// golden Wan pipeline. A refusal is an ApiError (the server's 4xx); anything else thrown is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/pipeline/pipeline.h"
#include "dattn/serve/api_error.h"
#include "dattn/serve/request_parse.h"

namespace {

dattn::serve::RequestFields fields_of(const std::string& text, bool json) {
  if (json) return dattn::serve::RequestFields::from_json(text);
  std::vector<std::pair<std::string, std::string>> form;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min<std::size_t>(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    const std::size_t eq = line.find('=');
    form.emplace_back(line.substr(0, eq), eq == std::string::npos ? "" : line.substr(eq + 1));
    start = end + 1;
  }
  return dattn::serve::RequestFields::from_form(form);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::unique_ptr<dattn::Pipeline> pipeline =
      dattn::load_pipeline(std::string(DATTN_FUZZ_GOLDEN) + "/wan_tiny/pipeline", {});  // configs only
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const dattn::serve::ServeLimits limits;
  const dattn::serve::RequestDefaults defaults;
  for (const bool image : {false, true}) {
    try {
      const dattn::serve::RequestFields fields = fields_of(text, data[0] & 1);
      if (image) dattn::serve::parse_image_request(fields, limits, defaults, *pipeline, "pipeline");
      else  // as the job store keeps it (invalid UTF-8 replaced)
        dattn::serve::parse_video_request(fields, limits, defaults, *pipeline, "pipeline")
            .to_json()
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } catch (const dattn::serve::ApiError& e) {
      if (e.status() < 400 || e.status() >= 500) std::abort();
    }
  }
  return 0;
}
