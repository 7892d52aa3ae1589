// The text stage: prompt cleaning, tokenizer, umT5, embeddings zeroed past each length.
#include "dattn/core/device_memory.h"
#include "dattn/models/umt5.h"
#include "dattn/text/prompt_clean.h"
#include "dattn/text/tokenizer.h"
#include "pipeline/wan_t2v/stage_clock.h"
#include "pipeline/wan_t2v/stages.h"

namespace dattn::wan_t2v {

TextEmbeddings encode_text(const WanPipelineInfo& info, const WanT2VRequest& request, bool guidance,
                           const WanRunSettings& settings, StageTimes& times) {
  StageClock load_clock;
  const T5Tokenizer tokenizer = T5Tokenizer::load(info.tokenizer_dir);
  // umT5 takes fp32 or bf16 (fp16 overflows in its feed-forwards): bf16 runs stay bf16, others fp32.
  const Umt5RunOptions options{settings.device, settings.dtype == DType::BF16 ? DType::BF16 : DType::F32};
  const Umt5Encoder encoder = Umt5Encoder::load(info.text_encoder_dir, options);
  times.emplace_back("load text encoder", load_clock.ms());

  StageClock clock;
  // One prompt per encoder call, as diffusers encodes the prompt and the negative prompt separately.
  auto embed = [&](const std::string& text) {
    return encode_prompt(encoder, tokenizer.encode({clean_prompt(text)}, request.max_sequence_length));
  };
  TextEmbeddings out;
  out.prompt = embed(request.prompt);
  if (guidance) out.negative = embed(request.negative_prompt);
  // CUDA work is asynchronous: wait for it so its time is this stage's, not the next one's.
  if (settings.device == Device::CUDA) device_synchronize();
  times.emplace_back("text encoding", clock.ms());
  // The encoder (umT5-XXL: 11 GiB of weights in bf16) is released when this returns, before the
  // transformer is loaded; only the embeddings ([1, 512, 4096] each) stay on the device.
  return out;
}

}  // namespace dattn::wan_t2v
