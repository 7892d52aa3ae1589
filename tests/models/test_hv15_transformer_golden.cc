// The HunyuanVideo-1.5 transformer against diffusers (golden hv15_tiny: the tiny pipeline's transformer,
// the cond call of pipeline step 1 in float64, with 33 of 1000 Qwen and 19 of 256 ByT5 tokens valid and
// zero image embeddings): every intermediate in forward order, the padded-token trimming, ragged batches
// (the key-padding mask), bf16, and bad inputs.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "dattn/core/error.h"
#include "models/golden_compare.h"
#include "models/hv15_golden.h"

namespace dattn::testing {
namespace {

struct ForwardRun {
  Tensor sample;
  Recording rec;
  double seconds = 0;
};

ForwardRun run_case(const HunyuanVideo15Transformer& model, const Hv15Case& c, bool record = true) {
  ForwardRun r;
  const auto t0 = std::chrono::steady_clock::now();
  r.sample = model.forward(c.hidden_states, c.timestep, c.text, record ? r.rec.hook() : Hv15Capture());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

double rel_l2(const Tensor& a, const Tensor& b) {
  const auto x = a.to_f64_vector(), y = b.to_f64_vector();
  EXPECT_EQ(x.size(), y.size());
  return compare(x.data(), y.data(), std::min(x.size(), y.size())).rel_l2;
}

class Hv15Golden : public ::testing::TestWithParam<std::string> {};

// float32 on the CPU against the float64 reference; diffusers' own float32 forward is 2.7e-7 from it.
TEST_P(Hv15Golden, Float32MatchesEveryIntermediate) {
  SafetensorsFile f(hv15_transformer_case());
  const auto model =
      HunyuanVideo15Transformer::load(hv15_tiny_transformer_dir(), {Device::CPU, DType::F32, hv15_backend(GetParam())});
  const ForwardRun r = run_case(model, read_hv15_case(f));
  ASSERT_EQ(r.sample.shape(), f.info("output.sample").shape);
  const auto cs = compare_intermediates(f, r.rec, [](const std::string&) { return 1e-5; });
  std::printf("[hv15 t2v %s fp32] %.1f ms\n%s", GetParam().c_str(), r.seconds * 1e3, report(cs).c_str());
  if (const auto bad = first_disagreement(cs)) FAIL() << "first disagreement: " << bad->name << ": " << bad->problem;
  const ErrorStats out = compare_output(r.sample, f);
  std::printf("  output.sample: %s\n", describe(out).c_str());
  ASSERT_EQ(out.nonfinite, 0u);
  const ErrorStats torch32 = compare_output(tensor_from_safetensors(f, "output.sample_fp32", DType::F64), f);
  std::printf("  (diffusers float32 vs float64: %s)\n", describe(torch32).c_str());
  EXPECT_LE(out.rel_l2, 10 * torch32.rel_l2 + 1e-7);
}

INSTANTIATE_TEST_SUITE_P(Backends, Hv15Golden, ::testing::Values("FLASH_ATTN", "TORCH_SDPA"));

// dattn drops padded text tokens before the refiner and the blocks; diffusers keeps them and masks them.
// The golden output (untrimmed) is matched above; here the padded rows' content is made huge, which the
// masked computation ignores: the output must not change by a single bit.
TEST(Hv15Trimming, PaddedTextContentCannotReachTheOutput) {
  SafetensorsFile f(hv15_transformer_case());
  const auto model = HunyuanVideo15Transformer::load(hv15_tiny_transformer_dir(), {Device::CPU, DType::F32, {}});
  const Hv15Case clean = read_hv15_case(f);
  Hv15Case noisy = clean;
  const auto fill_padding = [](const Tensor& x, const Tensor& mask) {
    auto v = x.to_f64_vector();
    const auto m = mask.to_f64_vector();
    const std::int64_t width = x.dim(2);
    for (std::size_t i = 0; i < m.size(); ++i)
      if (m[i] == 0)
        for (std::int64_t c = 0; c < width; ++c) v[i * width + c] = 1e4 * (c % 2 ? 1 : -1);
    return Tensor::from_f64(v, x.shape(), DType::F64);
  };
  noisy.text.encoder_hidden_states = fill_padding(clean.text.encoder_hidden_states, clean.text.encoder_attention_mask);
  noisy.text.encoder_hidden_states_2 =
      fill_padding(clean.text.encoder_hidden_states_2, clean.text.encoder_attention_mask_2);
  const Tensor a = run_case(model, clean, false).sample, b = run_case(model, noisy, false).sample;
  EXPECT_EQ(a.to_f32_vector(), b.to_f32_vector());
  // The test can fail: the same change to a valid row moves the output.
  Hv15Case valid_changed = clean;
  auto v = clean.text.encoder_hidden_states.to_f64_vector();
  v[0] += 1.0;
  valid_changed.text.encoder_hidden_states = Tensor::from_f64(v, clean.text.encoder_hidden_states.shape(), DType::F64);
  EXPECT_GT(rel_l2(run_case(model, valid_changed, false).sample, a), 1e-6);
}

// [B, L] mask whose first `n` entries are valid.
Tensor prefix_mask(std::int64_t length, std::int64_t n) {
  std::vector<double> m(static_cast<std::size_t>(length), 0.0);
  for (std::int64_t i = 0; i < n; ++i) m[i] = 1.0;
  return Tensor::from_f64(m, {1, length}, DType::F64);
}

Tensor stack2(const Tensor& a, const Tensor& b) {
  auto x = a.to_f64_vector();
  const auto y = b.to_f64_vector();
  x.insert(x.end(), y.begin(), y.end());
  Shape s = a.shape();
  s[0] = 2;
  return Tensor::from_f64(x, s, DType::F64);
}

Tensor item(const Tensor& x, std::int64_t i) {
  return x.to(DType::F32).narrow0(i, 1).clone();
}

class Hv15RaggedBatch : public ::testing::TestWithParam<std::string> {};

// (SAGE_ATTN needs head_dim 64 or 128 and bf16/fp16: test_hv15_transformer_backends.cc runs it on a
// random model of that geometry.)
// A batch of two whose text streams differ in length (item 1: 20 Qwen tokens, no glyph text, as an
// unconditional branch has) runs the joint attention with a key-padding mask; each item must equal its
// own run alone, where there is no padding. A backend that ignored the mask would mix item 1's padded
// rows into its video tokens.
TEST_P(Hv15RaggedBatch, EachItemEqualsItsRunAlone) {
  SafetensorsFile f(hv15_transformer_case());
  const auto model =
      HunyuanVideo15Transformer::load(hv15_tiny_transformer_dir(), {Device::CPU, DType::F32, hv15_backend(GetParam())});
  const Hv15Case first = read_hv15_case(f);
  Hv15Case second = first;
  second.text.encoder_attention_mask = prefix_mask(first.text.encoder_attention_mask.dim(1), 20);
  second.text.encoder_attention_mask_2 = prefix_mask(first.text.encoder_attention_mask_2.dim(1), 0);
  Hv15Case both = first;
  both.hidden_states = stack2(first.hidden_states, first.hidden_states);
  both.text.encoder_hidden_states = stack2(first.text.encoder_hidden_states, second.text.encoder_hidden_states);
  both.text.encoder_attention_mask = stack2(first.text.encoder_attention_mask, second.text.encoder_attention_mask);
  both.text.encoder_hidden_states_2 = stack2(first.text.encoder_hidden_states_2, second.text.encoder_hidden_states_2);
  both.text.encoder_attention_mask_2 =
      stack2(first.text.encoder_attention_mask_2, second.text.encoder_attention_mask_2);
  both.text.image_embeds = stack2(first.text.image_embeds, first.text.image_embeds);
  const Tensor batched = run_case(model, both, false).sample;
  const Tensor alone0 = run_case(model, first, false).sample, alone1 = run_case(model, second, false).sample;
  const double limit = GetParam() == "SPARSE_BLOCK" ? 1e-4 : 1e-6;
  const double e0 = rel_l2(item(batched, 0), alone0), e1 = rel_l2(item(batched, 1), alone1);
  std::printf("[hv15 ragged %s] item 0: %.3g, item 1: %.3g\n", GetParam().c_str(), e0, e1);
  EXPECT_LE(e0, limit);
  EXPECT_LE(e1, limit);
  // The two items really differ (the test would pass vacuously otherwise).
  EXPECT_GT(rel_l2(alone0, alone1), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Backends, Hv15RaggedBatch,
                         ::testing::Values("FLASH_ATTN", "TORCH_SDPA", "SPARSE_BLOCK"));

// bf16 weights and activations on the CPU (the GPU's run dtype): bounded at bf16 tolerance.
TEST(Hv15GoldenBf16, ReportsErrorAtBf16Tolerance) {
  SafetensorsFile f(hv15_transformer_case());
  const auto model = HunyuanVideo15Transformer::load(hv15_tiny_transformer_dir(), {Device::CPU, DType::BF16, {}});
  const ForwardRun r = run_case(model, read_hv15_case(f));
  EXPECT_EQ(r.sample.dtype(), DType::BF16);
  const auto cs = compare_intermediates(f, r.rec, [](const std::string&) { return 3e-2; });
  std::printf("[hv15 t2v bf16] %.1f ms\n%s", r.seconds * 1e3, report(cs).c_str());
  if (const auto bad = first_disagreement(cs)) ADD_FAILURE() << bad->name << ": " << bad->problem;
  const ErrorStats out = compare_output(r.sample, f);
  std::printf("  output.sample: %s\n", describe(out).c_str());
  ASSERT_EQ(out.nonfinite, 0u);
  EXPECT_LE(out.rel_l2, 2e-2);
}

// The pipeline passes t.to(latents.dtype): in bf16 predict() must see 936 for 937.5, exactly.
TEST(Hv15Transformer, PredictRoundsTheTimestepToTheRunDtype) {
  SafetensorsFile f(hv15_transformer_case());
  const auto model = HunyuanVideo15Transformer::load(hv15_tiny_transformer_dir(), {Device::CPU, DType::BF16, {}});
  const Hv15Case c = read_hv15_case(f);
  Conditioning cond;
  cond.tensors[kHv15TextInput] = c.text.encoder_hidden_states;
  cond.tensors[kHv15TextMask] = c.text.encoder_attention_mask;
  cond.tensors[kHv15GlyphInput] = c.text.encoder_hidden_states_2;
  cond.tensors[kHv15GlyphMask] = c.text.encoder_attention_mask_2;
  // The golden hidden_states are latents ++ zero conditioning ++ zero mask: predict() appends those zeros.
  const Tensor latents = c.hidden_states.to(DType::F32).reshape({17, 72}).narrow0(0, 8).clone().reshape({1, 8, 3, 4, 6});
  const Tensor predicted = model.predict(latents, 937.5, cond);
  const Tensor at_936 = model.forward(c.hidden_states, Tensor::from_f64({936.0}, {1}, DType::F64), c.text);
  const Tensor at_937_5 = model.forward(c.hidden_states, Tensor::from_f64({937.5}, {1}, DType::F64), c.text);
  EXPECT_EQ(predicted.to_f32_vector(), at_936.to(DType::F32).to_f32_vector());
  EXPECT_NE(predicted.to_f32_vector(), at_937_5.to(DType::F32).to_f32_vector());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

TEST(Hv15Transformer, BadInputsAreRefusedWithTheirNames) {
  SafetensorsFile f(hv15_transformer_case());
  const auto model = HunyuanVideo15Transformer::load(hv15_tiny_transformer_dir(), {Device::CPU, DType::F32, {}});
  const Hv15Case good = read_hv15_case(f);
  const auto fails = [&](Hv15Case c) { return error_of([&] { model.forward(c.hidden_states, c.timestep, c.text); }); };
  Hv15Case c = good;
  c.hidden_states = Tensor::zeros({1, 16, 3, 4, 6}, DType::F32);
  EXPECT_NE(fails(c).find("in_channels"), std::string::npos) << fails(c);
  c = good;
  c.text.encoder_attention_mask = prefix_mask(1000, 0);
  EXPECT_NE(fails(c).find("no valid text token"), std::string::npos) << fails(c);
  c = good;
  c.text.encoder_attention_mask = prefix_mask(999, 10);
  EXPECT_NE(fails(c).find("encoder_attention_mask"), std::string::npos) << fails(c);
  c = good;
  c.text.encoder_hidden_states_2 = Tensor::zeros({1, 256, 31}, DType::F32);
  EXPECT_NE(fails(c).find("text_embed_2_dim"), std::string::npos) << fails(c);
  c = good;
  c.timestep = Tensor::from_f64({std::nan("")}, {1}, DType::F64);
  EXPECT_NE(fails(c).find("timestep"), std::string::npos) << fails(c);
}

TEST(Hv15Transformer, ABadCheckpointNamesWhatIsMissing) {
  // A config with one more layer than the weights hold.
  const std::string dir = ::testing::TempDir() + "/hv15_bad_layers";
  std::filesystem::create_directories(dir);
  auto j = nlohmann::json::parse(std::ifstream(hv15_tiny_transformer_dir() + "/config.json"));
  j["num_layers"] = 3;
  std::ofstream(dir + "/config.json") << j.dump();
  std::filesystem::copy_file(hv15_tiny_transformer_dir() + "/diffusion_pytorch_model.safetensors",
                             dir + "/diffusion_pytorch_model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string e = error_of([&] { HunyuanVideo15Transformer::load(dir, {Device::CPU, DType::F32, {}}); });
  EXPECT_NE(e.find("missing: transformer_blocks.2."), std::string::npos) << e;
  EXPECT_NE(e.find("HunyuanVideo15Transformer3DModel"), std::string::npos) << e;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dattn::testing
