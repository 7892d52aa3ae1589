// Fuzzes the attention configuration: the first byte picks the JSON reader (-dac) or the command-line
// flag parser (the rest split at newlines into arguments: --diffusion-attention-config.PATH VALUE and
// friends), then DIFFUSION_ATTENTION_BACKEND's reader. Either a normalised config or a ConfigError
// (UserError); anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dattn/attention/config.h"
#include "dattn/core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: {
        const dattn::AttentionConfig c = dattn::AttentionConfig::from_json_string(text);
        (void)c.to_json().dump();
        break;
      }
      case 1: {
        std::vector<std::string> args;
        std::size_t start = 0;
        for (std::size_t i = 0; i <= text.size(); ++i)
          if (i == text.size() || text[i] == '\n') {
            args.emplace_back(text.substr(start, i - start));
            start = i + 1;
          }
        const dattn::AttentionFlags flags = dattn::extract_attention_flags(args);
        (void)dattn::config_from_flags(flags).to_json().dump();
        break;
      }
      default:
        (void)dattn::env_default_spec(std::string(text).c_str());
    }
  } catch (const dattn::UserError&) {
  }
  return 0;
}
