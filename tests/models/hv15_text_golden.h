#pragma once
// HunyuanVideo-1.5's two text encoders against the golden hv15_tiny cases (transformers'
// Qwen2_5_VLTextModel and the ByT5-style T5EncoderModel, float64 references): shared by the CPU fp32
// tests and the CUDA bf16 tests. Reports through GoogleTest's non-fatal assertions and prints each
// comparison.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "dattn/attention/metrics.h"
#include "dattn/io/safetensors.h"
#include "dattn/models/hunyuanvideo15_text.h"
#include "dattn/models/qwen2_5_vl.h"
#include "dattn/models/umt5.h"
#include "support/golden_dir.h"

namespace dattn::testing::hv15_text {

inline std::string qwen_dir() { return golden_dir() + "/hv15_tiny/pipeline/text_encoder"; }
inline std::string byt5_dir() { return golden_dir() + "/hv15_tiny/pipeline/text_encoder_2"; }
inline std::string cases_file() { return golden_dir() + "/hv15_tiny/cases/text_encoders.safetensors"; }
inline std::string tokenizer_file() { return golden_dir() + "/hv15_tiny/cases/tokenizer.safetensors"; }

// encode_prompt([quoted, plain, ""]) of the golden case: rows 1, 0 and 3 of the tokenizer case.
inline constexpr std::int64_t kPromptRows[] = {1, 0, 3};
inline constexpr std::int64_t kCropStart = 182;  // the tiny template's prefix (golden README "Crop index")

inline std::vector<std::int64_t> read_i64(const SafetensorsFile& f, const std::string& name) {
  const auto v = f.read_f64(name);
  return {v.begin(), v.end()};
}

inline Qwen25VLRunOptions qwen_options(Device device, DType dtype) {
  Qwen25VLRunOptions o;
  o.device = device;
  o.dtype = dtype;
  return o;
}

// Rows kPromptRows of a [10, S] tokenizer tensor.
inline std::vector<std::int64_t> prompt_rows(const SafetensorsFile& f, const std::string& name) {
  const std::vector<std::int64_t> all = read_i64(f, name);
  const std::int64_t s = f.info(name).shape[1];
  std::vector<std::int64_t> out;
  for (std::int64_t r : kPromptRows) out.insert(out.end(), all.begin() + r * s, all.begin() + (r + 1) * s);
  return out;
}

// The first `rows` rows of got [1, S, W] against ref [1, rows, W]; prints "[what] stats".
inline ErrorStats compare_rows(const Tensor& got, const std::vector<double>& ref, std::int64_t rows,
                               const std::string& what) {
  const std::vector<double> g = got.to_f64_vector();
  const std::size_t n = static_cast<std::size_t>(rows * got.dim(2));
  EXPECT_EQ(ref.size(), n) << what;
  const ErrorStats s = compare(g.data(), ref.data(), std::min(n, ref.size()));
  std::printf("[hv15 text] %s: %s\n", what.c_str(), describe(s).c_str());
  EXPECT_EQ(s.nonfinite, 0u) << what;
  return s;
}

// Qwen hidden_states 0..4 (valid rows of the quoted prompt), each within `limit` relative L2; and the
// early-stopping entry -3 equal to entry 2.
inline void qwen_hidden_states(Device device, DType dtype, double limit) {
  const SafetensorsFile f(cases_file());
  const Qwen25VLTextEncoder enc = Qwen25VLTextEncoder::load(qwen_dir(), qwen_options(device, dtype));
  const std::vector<std::int64_t> ids = read_i64(f, "text_encoder.input_ids");
  const std::vector<std::int64_t> mask = read_i64(f, "text_encoder.attention_mask");
  const std::int64_t seq = f.info("text_encoder.input_ids").shape[1];
  const std::int64_t rows = f.info("text_encoder.hidden_states.0").shape[1];  // 215 valid rows
  const std::vector<Tensor> hs = enc.hidden_states(ids, mask, 1, seq);
  ASSERT_EQ(hs.size(), 5u);
  for (std::size_t i = 0; i < hs.size(); ++i) {
    ASSERT_EQ(hs[i].shape(), (Shape{1, seq, 48}));
    EXPECT_EQ(hs[i].dtype(), dtype);
    const std::string name = "text_encoder.hidden_states." + std::to_string(i);
    const ErrorStats s = compare_rows(hs[i], f.read_f64(name), rows, name + " " + std::string(dtype_name(dtype)));
    EXPECT_LE(s.rel_l2, limit) << name;
  }
  // Entry -3 stops after layer 1: the same numbers as the full run's entry 2.
  const Tensor early = enc.hidden_state(ids, mask, 1, seq, -3);
  EXPECT_EQ(early.to_f64_vector(), hs[2].to_f64_vector()) << "hidden_state(-3) differs from hidden_states()[2]";
}

// prompt_embeds / prompt_embeds_mask of the three prompts (every row, padded ones included).
inline void qwen_prompt_embeds(Device device, DType dtype, double limit) {
  const SafetensorsFile f(cases_file()), tok(tokenizer_file());
  const Qwen25VLTextEncoder enc = Qwen25VLTextEncoder::load(qwen_dir(), qwen_options(device, dtype));
  const std::int64_t seq = tok.info("qwen.input_ids").shape[1];  // 1182
  const Hv15PromptEmbeds e = hv15_qwen_prompt_embeds(enc, prompt_rows(tok, "qwen.input_ids"),
                                                     prompt_rows(tok, "qwen.attention_mask"), 3, seq, kCropStart);
  ASSERT_EQ(e.embeds.shape(), (Shape{3, 1000, 48}));
  const std::vector<double> ref_mask = f.read_f64("prompt_embeds_mask");
  ASSERT_EQ(e.mask.size(), ref_mask.size());
  for (std::size_t i = 0; i < ref_mask.size(); ++i) ASSERT_EQ(double(e.mask[i]), ref_mask[i]) << "mask element " << i;
  const ErrorStats s = compare_rows(e.embeds.reshape({1, 3000, 48}), f.read_f64("prompt_embeds"), 3000,
                                    "prompt_embeds " + std::string(dtype_name(dtype)));
  EXPECT_LE(s.rel_l2, limit);
}

// ByT5 hidden_states 0..2 (valid rows of the glyph text).
inline void byt5_hidden_states(Device device, DType dtype, double limit) {
  const SafetensorsFile f(cases_file());
  const T5Encoder enc = T5Encoder::load_t5_family(byt5_dir(), {device, dtype});
  EXPECT_TRUE(enc.config().shared_position_bias);
  const std::vector<std::int64_t> ids = read_i64(f, "text_encoder_2.input_ids");
  const std::vector<std::int64_t> mask = read_i64(f, "text_encoder_2.attention_mask");
  const std::int64_t seq = f.info("text_encoder_2.input_ids").shape[1];
  const std::int64_t rows = f.info("text_encoder_2.hidden_states.0").shape[1];  // 19
  const std::vector<Tensor> hs = enc.hidden_states(ids, mask, 1, seq);
  ASSERT_EQ(hs.size(), 3u);
  for (std::size_t i = 0; i < hs.size(); ++i) {
    const std::string name = "text_encoder_2.hidden_states." + std::to_string(i);
    const ErrorStats s = compare_rows(hs[i], f.read_f64(name), rows, name + " " + std::string(dtype_name(dtype)));
    EXPECT_LE(s.rel_l2, limit) << name;
  }
}

// prompt_embeds_2 / prompt_embeds_mask_2: the quoted prompt runs ByT5, the other two are zeros.
inline void byt5_prompt_embeds(Device device, DType dtype, double limit) {
  const SafetensorsFile f(cases_file()), tok(tokenizer_file());
  const T5Encoder enc = T5Encoder::load_t5_family(byt5_dir(), {device, dtype});
  const std::int64_t seq = tok.info("byt5.input_ids").shape[1];  // 256
  const std::vector<std::int64_t> mask = prompt_rows(tok, "byt5.attention_mask");
  std::vector<bool> has_glyph;
  for (std::int64_t b = 0; b < 3; ++b) {
    bool any = false;
    for (std::int64_t j = 0; j < seq; ++j) any |= mask[b * seq + j] != 0;
    has_glyph.push_back(any);  // the tokenizer case's rows are all zero where there is no quoted text
  }
  ASSERT_EQ(has_glyph, (std::vector<bool>{true, false, false}));
  const Hv15PromptEmbeds e = hv15_byt5_prompt_embeds(enc, prompt_rows(tok, "byt5.input_ids"), mask, 3, seq, has_glyph);
  ASSERT_EQ(e.embeds.shape(), (Shape{3, 256, 32}));
  const std::vector<double> ref_mask = f.read_f64("prompt_embeds_mask_2");
  ASSERT_EQ(e.mask.size(), ref_mask.size());
  for (std::size_t i = 0; i < ref_mask.size(); ++i) ASSERT_EQ(double(e.mask[i]), ref_mask[i]) << "mask element " << i;
  const std::vector<double> got = e.embeds.to_f64_vector();
  for (std::size_t i = 256 * 32; i < got.size(); ++i) ASSERT_EQ(got[i], 0.0) << "no-glyph rows must be zero";
  const ErrorStats s = compare_rows(e.embeds.reshape({1, 768, 32}), f.read_f64("prompt_embeds_2"), 768,
                                    "prompt_embeds_2 " + std::string(dtype_name(dtype)));
  EXPECT_LE(s.rel_l2, limit);
}

}  // namespace dattn::testing::hv15_text
