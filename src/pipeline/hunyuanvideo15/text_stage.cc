// HunyuanVideo-1.5's text stage (see text_stage.h).
#include "pipeline/hunyuanvideo15/text_stage.h"

#include <vector>

#include "dattn/core/error.h"
#include "dattn/models/hunyuanvideo15/transformer.h"
#include "dattn/ops/combine.h"
#include "dattn/text/hv15_prompt.h"
#include "pipeline/common/text_output_check.h"

namespace dattn::hv15 {
namespace {

// diffusers' num_hidden_layers_to_skip = 2: hidden_states[-3].
constexpr std::int64_t kQwenHiddenStateIndex = -3;

struct Padded {
  Tensor embeds;  // [1, rows, width] in the run dtype on the run device
  Tensor mask;    // [1, rows] float32 0/1 on the host
};

// x's rows ([1, n, width], n <= rows; undefined: n = 0) followed by zero rows up to `rows`, and their mask.
Padded pad_rows(const Tensor& x, std::int64_t rows, std::int64_t width, Device device, DType dtype) {
  const std::int64_t n = x.defined() ? x.dim(1) : 0;
  Padded p{Tensor::zeros({1, rows, width}, dtype, device), Tensor()};
  if (n > 0) p.embeds.reshape({rows, width}).narrow0(0, n).copy_from(ops::cast(x.to(device), dtype).reshape({n, width}));
  std::vector<float> m(static_cast<std::size_t>(rows), 0.0f);
  for (std::int64_t i = 0; i < n; ++i) m[i] = 1.0f;
  p.mask = Tensor::from_f32(m, {1, rows});
  return p;
}

std::vector<std::int64_t> prefix(const std::vector<std::int64_t>& v, std::int64_t n) {
  return {v.begin(), v.begin() + n};
}

}  // namespace

AttentionSettings text_encoder_attention(const AttentionSettings& diffusion) {
  AttentionSettings s;
  const auto it = diffusion.config.per_role.find(kQwenTextEncoderRole);
  if (it != diffusion.config.per_role.end()) s.config.per_role[it->first] = it->second;
  return s;
}

AttentionSettings transformer_attention(const AttentionSettings& diffusion) {
  AttentionSettings s = diffusion;
  s.config.per_role.erase(kQwenTextEncoderRole);
  return s;
}

std::unique_ptr<TextEncoders> load_text_encoders(const Hv15PipelineInfo& info, Device device, DType dtype,
                                                 const AttentionSettings& attention) {
  const DType run = dtype == DType::BF16 ? DType::BF16 : DType::F32;
  Qwen25VLRunOptions q;
  q.device = device;
  q.dtype = run;
  q.attention = text_encoder_attention(attention);
  BpeTokenizer tokenizer = BpeTokenizer::load(info.tokenizer_dir);
  ChatTemplate chat_template = ChatTemplate::load(info.tokenizer_dir);
  const std::int64_t crop = crop_index(tokenizer, chat_template, default_system_message());
  return std::make_unique<TextEncoders>(TextEncoders{std::move(tokenizer), std::move(chat_template),
                                                     ByT5Tokenizer::load(info.tokenizer_2_dir),
                                                     Qwen25VLTextEncoder::load(info.text_encoder_dir, q),
                                                     T5Encoder::load_t5_family(info.text_encoder_2_dir, {device, run}),
                                                     crop});
}

Conditioning encode_prompt(const TextEncoders& text, const std::string& prompt, const char* kind, Device device,
                           DType dtype) {
  Conditioning c;
  // Qwen: the chat template, cropped after the encoder; only the valid prefix is run.
  const TokenizedBatch q = qwen_inputs(text.tokenizer, text.chat_template, {prompt}, default_system_message(),
                                       text.crop, kHv15QwenTokens);
  const std::int64_t n = q.valid_length(0);
  if (n <= text.crop)
    throw UserError("the prompt's chat-template input has " + std::to_string(n) + " tokens, no more than the " +
                    std::to_string(text.crop) + "-token template prefix: nothing of the prompt is left to encode");
  const Tensor hidden = text.qwen.hidden_state(prefix(q.input_ids, n), prefix(q.attention_mask, n), 1, n,
                                               kQwenHiddenStateIndex);
  const std::int64_t width = hidden.dim(2);
  const Tensor kept = hidden.reshape({n, width}).narrow0(text.crop, n - text.crop).reshape({1, n - text.crop, width});
  const Padded qwen = pad_rows(kept, kHv15QwenTokens, width, device, dtype);
  pipeline::check_text_embeddings(qwen.embeds, "the text encoder (Qwen2.5-VL, text_encoder/)", kind);
  c.tensors[kHv15TextInput] = qwen.embeds;
  c.tensors[kHv15TextMask] = qwen.mask;

  // ByT5 over the quoted glyph text; none: zero embeddings and an all-zero mask, as diffusers does.
  Tensor encoded;
  if (const auto g = byt5_inputs(text.tokenizer_2, prompt, kHv15ByT5Tokens)) {
    const std::int64_t m = g->valid_length(0);
    encoded = text.byt5.encode(prefix(g->input_ids, m), prefix(g->attention_mask, m), 1, m);
  }
  const Padded glyph = pad_rows(encoded, kHv15ByT5Tokens, text.byt5.config().d_model, device, dtype);
  pipeline::check_text_embeddings(glyph.embeds, "the second text encoder (ByT5, text_encoder_2/)", kind);
  c.tensors[kHv15GlyphInput] = glyph.embeds;
  c.tensors[kHv15GlyphMask] = glyph.mask;
  return c;
}

}  // namespace dattn::hv15
