// Fuzzes the text front end on arbitrary bytes (invalid UTF-8 included): prompt cleaning (html_unescape,
// whitespace folding) and the umT5 tokenizer of the tiny golden pipeline, whose ids must lie in the
// vocabulary and whose batch must have the asked length.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dattn/core/error.h"
#include "dattn/text/prompt_clean.h"
#include "dattn/text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dattn::T5Tokenizer tokenizer =
      dattn::T5Tokenizer::load(std::string(DATTN_FUZZ_GOLDEN) + "/wan_tiny/pipeline/tokenizer");
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)dattn::html_unescape(text);
    const std::string cleaned = dattn::clean_prompt(text);
    for (const int id : tokenizer.encode_pieces(cleaned))
      if (id < 0 || id >= tokenizer.vocab_size()) std::abort();
    const dattn::TokenizedBatch batch = tokenizer.encode({cleaned, std::string(text)}, 32);
    if (batch.input_ids.size() != 2 * 32 || batch.attention_mask.size() != 2 * 32) std::abort();
  } catch (const dattn::UserError&) {
  }
  return 0;
}
