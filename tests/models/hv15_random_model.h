#pragma once
// A random HunyuanVideo-1.5 transformer of a geometry every backend runs (2 heads x 64: SAGE_ATTN's head
// dim) and a ragged batch of two for it, shared by the CPU and CUDA backend tests.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "dattn/models/hunyuanvideo15/transformer.h"
#include "dattn/models/random_checkpoint.h"
#include "support/attention_cases.h"

namespace dattn::testing {

// Removed again when the test process exits (ctest runs every test in a process of its own).
struct RandomModelDir {
  std::string root, model;
  RandomModelDir() {
    root = ::testing::TempDir() + "/hv15_random_d64_" + std::to_string(::getpid());
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root);
    const nlohmann::json config = {{"_class_name", "HunyuanVideo15Transformer3DModel"},
                                   {"in_channels", 9},
                                   {"out_channels", 4},
                                   {"num_attention_heads", 2},
                                   {"attention_head_dim", 64},
                                   {"num_layers", 2},
                                   {"num_refiner_layers", 1},
                                   {"text_embed_dim", 48},
                                   {"text_embed_2_dim", 32},
                                   {"image_embed_dim", 16},
                                   {"rope_axes_dim", {16, 24, 24}},
                                   {"task_type", "t2v"}};
    std::ofstream(root + "/config.json") << config.dump();
    model = root + "/transformer";
    write_random_checkpoint(root + "/config.json", model, {DType::BF16, 7});
  }
  ~RandomModelDir() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
};

inline const std::string& random_model_dir() {
  static const RandomModelDir dir;
  return dir.model;
}

struct Inputs {
  Tensor hidden, timestep;
  Hv15TextInputs text;
};

inline Tensor gaussian(const Shape& s, std::mt19937_64& rng) {
  return Tensor::from_f32(test::gaussian(static_cast<std::size_t>(shape_numel(s)), rng), s);
}

// Batch of two: item 0 has 30 of 40 Qwen and 9 of 16 ByT5 tokens valid, item 1 12 Qwen and no glyph text;
// `only` picks one item alone (-1: both).
inline Inputs make_inputs(int only) {
  std::mt19937_64 rng(1234);
  const std::int64_t b = 2;
  Inputs in;
  in.hidden = gaussian({b, 9, 2, 4, 6}, rng);
  in.timestep = Tensor::from_f64({900.0}, {1}, DType::F64);
  in.text.encoder_hidden_states = gaussian({b, 40, 48}, rng);
  in.text.encoder_hidden_states_2 = gaussian({b, 16, 32}, rng);
  std::vector<float> m1(b * 40, 0.0f), m2(b * 16, 0.0f);
  for (int i = 0; i < 30; ++i) m1[i] = 1;
  for (int i = 0; i < 12; ++i) m1[40 + i] = 1;
  for (int i = 0; i < 9; ++i) m2[i] = 1;
  in.text.encoder_attention_mask = Tensor::from_f32(m1, {b, 40});
  in.text.encoder_attention_mask_2 = Tensor::from_f32(m2, {b, 16});
  if (only < 0) return in;
  const auto pick = [&](const Tensor& t) { return t.narrow0(only, 1).clone(); };
  in.hidden = pick(in.hidden);
  in.text.encoder_hidden_states = pick(in.text.encoder_hidden_states);
  in.text.encoder_hidden_states_2 = pick(in.text.encoder_hidden_states_2);
  in.text.encoder_attention_mask = pick(in.text.encoder_attention_mask);
  in.text.encoder_attention_mask_2 = pick(in.text.encoder_attention_mask_2);
  return in;
}

}  // namespace dattn::testing
