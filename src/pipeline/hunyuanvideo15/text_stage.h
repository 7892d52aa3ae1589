#pragma once
// HunyuanVideo-1.5's text stage: the prompt through the Qwen2.5-VL chat template and text model (the
// hidden state of layer num_layers - 2, the template prefix cropped) and, when the prompt quotes text,
// that glyph text through ByT5. The transformer's conditioning (dattn/models/hunyuanvideo15/transformer.h
// names) comes out, padded as diffusers pads it: 1000 Qwen and 256 ByT5 rows with their masks.
//
// Only valid tokens are encoded (the Qwen text model is causal and the inputs right-padded; ByT5 attends
// over its valid keys only), and padded rows are zeros: diffusers computes values there, but they are
// masked everywhere downstream and cannot reach the video, so this is exact for the output and saves
// the 7B text model most of its 1108-token sequence.
#include <memory>
#include <string>

#include "dattn/attention/config.h"
#include "dattn/models/denoiser.h"
#include "dattn/models/qwen2_5_vl.h"
#include "dattn/models/umt5.h"
#include "dattn/pipeline/hunyuanvideo15/hv15_pipeline.h"
#include "dattn/text/bpe_tokenizer.h"
#include "dattn/text/byt5_tokenizer.h"
#include "dattn/text/chat_template.h"

namespace dattn::hv15 {

struct TextEncoders {
  BpeTokenizer tokenizer;
  ChatTemplate chat_template;
  ByT5Tokenizer tokenizer_2;
  Qwen25VLTextEncoder qwen;
  T5Encoder byt5;
  std::int64_t crop = 0;  // template prefix tokens, counted with this tokenizer
};

// The text encoders' attention: their own role (text_encoder.self) set only by a per_role entry of that
// name; the diffusion default and the environment do not apply to them.
AttentionSettings text_encoder_attention(const AttentionSettings& diffusion);
// The transformer's: `diffusion` without the text encoder's per_role entry.
AttentionSettings transformer_attention(const AttentionSettings& diffusion);

// Both run in bf16 for a bf16 pipeline, else fp32 (fp16 overflows in T5 feed-forwards).
std::unique_ptr<TextEncoders> load_text_encoders(const Hv15PipelineInfo& info, Device device, DType dtype,
                                                 const AttentionSettings& attention);

// The conditioning of one prompt, embeddings in `dtype` on `device`, masks float32 0/1 on the host. NumericError
// naming the encoder and `kind` ("prompt", "negative prompt") when its embeddings hold NaN or Inf.
Conditioning encode_prompt(const TextEncoders& text, const std::string& prompt, const char* kind, Device device,
                           DType dtype);

}  // namespace dattn::hv15
