// Fuzzes the text front end on arbitrary bytes (invalid UTF-8 included): prompt cleaning (html_unescape,
// whitespace folding), the umT5 tokenizer of the tiny golden pipeline, whose ids must lie in the
// vocabulary and whose batch must have the asked length, and HunyuanVideo-1.5's text inputs (the Qwen2
// byte-level BPE through its chat template, glyph-text extraction and ByT5), whose ids must lie in
// their vocabularies.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "dattn/core/error.h"
#include "dattn/text/bpe_tokenizer.h"
#include "dattn/text/byt5_tokenizer.h"
#include "dattn/text/chat_template.h"
#include "dattn/text/hv15_prompt.h"
#include "dattn/text/prompt_clean.h"
#include "dattn/text/tokenizer.h"

namespace {

void fuzz_hv15(std::string_view text) {
  static const std::string dir = std::string(DATTN_FUZZ_GOLDEN) + "/hv15_tiny/pipeline/";
  static const dattn::BpeTokenizer qwen = dattn::BpeTokenizer::load(dir + "tokenizer");
  static const dattn::ChatTemplate tpl = dattn::ChatTemplate::load(dir + "tokenizer");
  static const dattn::ByT5Tokenizer byt5 = dattn::ByT5Tokenizer::load(dir + "tokenizer_2");
  for (const int id : qwen.encode(text))
    if (id < 0 || id > 533) std::abort();  // 512 byte-level tokens and merges, 22 added tokens
  const dattn::TokenizedBatch q =
      dattn::hv15::qwen_inputs(qwen, tpl, {std::string(text)}, dattn::hv15::default_system_message(), 182, 16);
  if (q.input_ids.size() != 198 || q.valid_length(0) > 198) std::abort();
  const std::optional<dattn::TokenizedBatch> g = dattn::hv15::byt5_inputs(byt5, text, 64);
  if (g)
    for (const std::int64_t id : g->input_ids)
      if (id < 0 || id > 393 || g->input_ids.size() != 64) std::abort();
}

}  // namespace

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
  try {
    fuzz_hv15(text);
  } catch (const dattn::UserError&) {  // invalid UTF-8
  }
  return 0;
}
