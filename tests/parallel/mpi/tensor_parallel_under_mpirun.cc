// Tensor parallel's pieces under `mpirun -np N` (2 or 4): each rank takes its slice of a checkpoint
// tensor, the RMS norm across ranks equals the whole rows' norm, and a Wan transformer (random weights,
// 4 heads) run tensor-parallel over every rank, and at 4 ranks as tensor parallel 2 x Ulysses 2, returns
// one process's prediction to float32 rounding, as does a HunyuanVideo-1.5 transformer (random, 4 heads)
// on a ragged batch of two, the same two ways. Every rank makes the same collectives whatever it sees.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dattn/attention/metrics.h"
#include "dattn/core/error.h"
#include "dattn/io/safetensors_writer.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/hunyuanvideo15/transformer.h"
#include "dattn/models/random_checkpoint.h"
#include "dattn/models/wan/transformer.h"
#include "dattn/ops/norm.h"
#include "dattn/parallel/groups.h"
#include "dattn/parallel/world.h"
#include "models/tensor_parallel.h"
#include "parallel/mpi/mpi_world.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

class MpiTensorParallel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!parallel::built_with_mpi()) GTEST_SKIP() << "this build has no MPI (configure with -DDATTN_MPI=on)";
    ASSERT_EQ(g_world->size(), g_expected_ranks) << "run under mpirun -np " << g_expected_ranks;
  }
  int rank() const { return g_world->rank(); }
  int size() const { return g_world->size(); }
  // A directory of this rank's own (every rank writes its own files: no shared path to agree on).
  std::string dir(const std::string& name) const {
    const fs::path p = fs::path(::testing::TempDir()) / ("dattn_tp_" + std::to_string(getpid()) + "_" + name);
    fs::remove_all(p);
    return p.string();
  }
};

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);  // the same seed on every rank: the same "whole" tensor everywhere
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Columns [start, start + count) of the rows of `width` values.
std::vector<float> columns(const std::vector<float>& rows, std::int64_t width, std::int64_t start, std::int64_t count) {
  std::vector<float> out;
  for (std::size_t r = 0; r < rows.size() / static_cast<std::size_t>(width); ++r)
    out.insert(out.end(), rows.begin() + r * width + start, rows.begin() + r * width + start + count);
  return out;
}

std::vector<std::uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST_F(MpiTensorParallel, EachRankTakesItsSliceOfACheckpointTensor) {
  const std::int64_t out = 3 * size(), in = 2 * size();
  const std::vector<float> w = random_values(static_cast<std::size_t>(out * in), 11);
  const std::string d = dir("slice");
  fs::create_directories(d);
  const std::string file = d + "/w.safetensors";
  write_safetensors(file, {{"w", "F32", {out, in}, bytes_of(w)}});
  WeightStore store(std::vector<std::string>{file});
  // Rows (column-parallel): the ranks' parts gathered in rank order are the whole tensor.
  const TensorSlice rows = models::rank_slice(*g_world, out, 0);
  EXPECT_EQ(rows.start, rank() * 3);
  EXPECT_EQ(rows.length, 3);
  const Tensor part = store.take("w", DType::F32, Device::CPU, {out, in}, rows);
  EXPECT_EQ(part.shape(), (Shape{3, in}));
  EXPECT_EQ(g_world->all_gather(part).to_f32_vector(), w);
  // Columns (row-parallel).
  const TensorSlice cols = models::rank_slice(*g_world, in, 1);
  const Tensor col_part = store.take("w", DType::F32, Device::CPU, {out, in}, cols);
  EXPECT_EQ(col_part.shape(), (Shape{out, 2}));
  EXPECT_EQ(col_part.to_f32_vector(), columns(w, in, rank() * 2, 2));
  EXPECT_THROW(models::rank_slice(*g_world, size() + 1, 0), UserError);
  fs::remove_all(d);
}

// The RMS norm across heads of tensor parallel against ops::rms_norm (and its rope form) of the whole
// rows, in fp32 and bf16: each rank's columns must be the whole norm's columns to float32 rounding.
TEST_F(MpiTensorParallel, RmsNormAcrossRanksIsTheWholeRowsNorm) {
  const std::int64_t b = 2, s = 5, width = 24 * size(), part = width / size(), dr = 8;
  const float eps = 1e-6f;
  const std::vector<float> x = random_values(static_cast<std::size_t>(b * s * width), 21);
  std::vector<float> gain = random_values(static_cast<std::size_t>(width), 22);
  for (float& g : gain) g = 1.0f + 0.1f * g;
  std::vector<float> angles = random_values(static_cast<std::size_t>(s * dr), 23), cos, sin;
  for (float a : angles) cos.push_back(std::cos(a)), sin.push_back(std::sin(a));
  const Tensor cos_t = Tensor::from_f32(cos, {s, dr}), sin_t = Tensor::from_f32(sin, {s, dr});
  const std::int64_t start = rank() * part;
  for (DType dtype : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor whole = Tensor::from_f32(x, {b, s, width}, dtype), g = Tensor::from_f32(gain, {width}, dtype);
    const Tensor mine = Tensor::from_f32(columns(whole.to_f32_vector(), width, start, part), {b, s, part}, dtype);
    const Tensor my_gain = Tensor::from_f32(columns(g.to_f32_vector(), width, start, part), {part}, dtype);

    const std::vector<float> want = columns(ops::rms_norm(whole, eps, g).to_f32_vector(), width, start, part);
    const std::vector<float> got = models::rms_norm_across_ranks(*g_world, mine, width, eps, my_gain).to_f32_vector();
    const std::vector<float> want_rope = columns(
        ops::rms_norm_rope_interleaved(whole.reshape({b, s, 1, width}), eps, g, cos_t, sin_t).to_f32_vector(), width,
        start, part);
    const std::vector<float> got_rope =
        models::rms_norm_rope_across_ranks(*g_world, mine.reshape({b, s, 1, part}), width, eps, my_gain, cos_t, sin_t)
            .to_f32_vector();
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(got_rope.size(), want_rope.size());
    // One rounding of the output's dtype at most (the double partial sums are added in another order).
    const float ulp = dtype == DType::F32 ? 0x1p-23f : 0x1p-7f;
    double worst = 0, worst_rope = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_LE(std::fabs(got[i] - want[i]), ulp * std::fabs(want[i])) << i;
      EXPECT_LE(std::fabs(got_rope[i] - want_rope[i]), ulp * std::fabs(want_rope[i])) << i;
      worst = std::max(worst, double(std::fabs(got[i] - want[i])));
      worst_rope = std::max(worst_rope, double(std::fabs(got_rope[i] - want_rope[i])));
    }
    if (rank() == 0)
      std::printf("rms norm across %d ranks (%s): max abs difference %.3g, with rope %.3g\n", size(),
                  std::string(dtype_name(dtype)).c_str(), worst, worst_rope);
    // The partial norm alone (each rank's own statistics) would differ: the test can fail.
    const std::vector<float> local = ops::rms_norm(mine, eps, my_gain).to_f32_vector();
    double apart = 0;
    for (std::size_t i = 0; i < local.size(); ++i) apart = std::max(apart, double(std::fabs(local[i] - want[i])));
    EXPECT_GT(apart, 1e-3);
  }
}

// A 4-head Wan transformer with random weights, written by each rank to its own directory.
std::string write_wan_model(const std::string& dir, int ffn_dim = 64) {
  fs::create_directories(dir);
  const std::string config = dir + "/config.json";
  std::ofstream(config) << R"({"_class_name": "WanTransformer3DModel", "attention_head_dim": 16,
    "cross_attn_norm": true, "eps": 1e-06, "ffn_dim": )" << ffn_dim << R"(, "freq_dim": 32, "in_channels": 4,
    "num_attention_heads": 4, "num_layers": 2, "out_channels": 4, "patch_size": [1, 2, 2],
    "qk_norm": "rms_norm_across_heads", "rope_max_seq_len": 1024, "text_dim": 16})";
  RandomCheckpointOptions o;
  o.dtype = DType::F32;
  o.seed = 5;
  write_random_checkpoint(config, dir + "/transformer", o);
  return dir + "/transformer";
}

TEST_F(MpiTensorParallel, WanTransformerMatchesOneProcessToFloat32Rounding) {
  const std::string base = dir("wan");
  const std::string model = write_wan_model(base);
  const Tensor hidden = Tensor::from_f32(random_values(1 * 4 * 2 * 4 * 4, 31), {1, 4, 2, 4, 4});  // 8 tokens
  const Tensor text = Tensor::from_f32(random_values(1 * 6 * 16, 32), {1, 6, 16});
  const Tensor t = Tensor::from_f64({500.0}, {1}, DType::F64);
  const std::vector<double> want = WanTransformer::load(model, {}).forward(hidden, t, text).to_f64_vector();

  const auto check = [&](const parallel::ParallelDegrees& d, const char* what) {
    SCOPED_TRACE(what);
    const parallel::ParallelGroups g = parallel::make_groups(g_world, d);
    WanRunOptions o;
    o.tensor_parallel = g.tensor_parallel;
    o.ulysses = g.ulysses;
    const std::vector<double> got = WanTransformer::load(model, o).forward(hidden, t, text).to_f64_vector();
    ASSERT_EQ(got.size(), want.size());
    const ErrorStats e = compare(got.data(), want.data(), want.size());
    EXPECT_EQ(e.nonfinite, 0u);
    EXPECT_LE(e.rel_l2, 2e-6) << describe(e);
    EXPECT_LE(e.max_abs, 1e-5) << describe(e);
    if (rank() == 0) std::printf("Wan transformer, %s: %s\n", what, describe(e).c_str());
  };
  parallel::ParallelDegrees tp;
  tp.tensor_parallel = size();
  check(tp, size() == 2 ? "tensor parallel 2" : "tensor parallel 4");
  if (size() == 4) {
    parallel::ParallelDegrees both;
    both.tensor_parallel = 2;
    both.ulysses = 2;
    check(both, "tensor parallel 2 x Ulysses 2");
  }
  fs::remove_all(base);
}

// WanTransformer::load's own checks (for callers other than the pipeline), before any weight is read.
TEST_F(MpiTensorParallel, WanTransformerRefusesSplitsItCannotRun) {
  const std::string base = dir("wan_odd");
  const std::string model = write_wan_model(base, 63);
  WanRunOptions o;
  o.tensor_parallel = g_world;
  try {
    (void)WanTransformer::load(model, o);
    ADD_FAILURE() << "an FFN of 63 columns was split over " << size() << " ranks";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("ffn_dim 63 does not split over " + std::to_string(size()) +
                                         " tensor-parallel ranks"), std::string::npos) << e.what();
  }
  // At 4 ranks: the world as both the tensor-parallel and the Ulysses group asks 4 heads to split over
  // 16 (refused when the blocks are built, before any collective or weight).
  if (size() == 4) {
    o.ulysses = g_world;
    try {
      (void)WanTransformer::load(write_wan_model(base + "_heads"), o);
      ADD_FAILURE() << "4 heads were split over 16";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("4 attention heads do not split over 16 ranks"), std::string::npos)
          << e.what();
    }
  }
  fs::remove_all(base);
  fs::remove_all(base + "_heads");
}

// A 4-head HunyuanVideo-1.5 transformer (head dim 16 = rope axes 4 + 6 + 6, FFN 256) with random weights.
std::string write_hv15_model(const std::string& dir) {
  fs::create_directories(dir);
  const std::string config = dir + "/config.json";
  std::ofstream(config) << R"({"_class_name": "HunyuanVideo15Transformer3DModel", "in_channels": 9,
    "out_channels": 4, "num_attention_heads": 4, "attention_head_dim": 16, "num_layers": 2,
    "num_refiner_layers": 1, "text_embed_dim": 24, "text_embed_2_dim": 16, "image_embed_dim": 8,
    "rope_axes_dim": [4, 6, 6], "task_type": "t2v"})";
  RandomCheckpointOptions o;
  o.dtype = DType::F32;
  o.seed = 9;
  write_random_checkpoint(config, dir + "/transformer", o);
  return dir + "/transformer";
}

// Both streams split (the joint attention over video then text, text keys masked per item), the token
// refiner replicated, against one process.
TEST_F(MpiTensorParallel, HunyuanVideo15TransformerMatchesOneProcessToFloat32Rounding) {
  const std::string base = dir("hv15");
  const std::string model = write_hv15_model(base);
  const std::int64_t b = 2;
  Hv15TextInputs text;
  text.encoder_hidden_states = Tensor::from_f32(random_values(b * 10 * 24, 41), {b, 10, 24});
  text.encoder_hidden_states_2 = Tensor::from_f32(random_values(b * 6 * 16, 42), {b, 6, 16});
  std::vector<float> m1(b * 10, 0.0f), m2(b * 6, 0.0f);
  for (int i = 0; i < 7; ++i) m1[static_cast<std::size_t>(i)] = 1;  // item 0: 7 of 10 tokens, 3 glyph tokens
  for (int i = 0; i < 4; ++i) m1[static_cast<std::size_t>(10 + i)] = 1;  // item 1: 4 tokens, no glyph text
  for (int i = 0; i < 3; ++i) m2[static_cast<std::size_t>(i)] = 1;
  text.encoder_attention_mask = Tensor::from_f32(m1, {b, 10});
  text.encoder_attention_mask_2 = Tensor::from_f32(m2, {b, 6});
  const Tensor hidden = Tensor::from_f32(random_values(b * 9 * 2 * 4 * 4, 43), {b, 9, 2, 4, 4});
  const Tensor t = Tensor::from_f64({700.0}, {1}, DType::F64);
  const std::vector<double> want = HunyuanVideo15Transformer::load(model, {}).forward(hidden, t, text).to_f64_vector();

  const auto check = [&](const parallel::ParallelDegrees& d, const std::string& what) {
    SCOPED_TRACE(what);
    const parallel::ParallelGroups g = parallel::make_groups(g_world, d);
    Hv15RunOptions o;
    o.tensor_parallel = g.tensor_parallel;
    o.ulysses = g.ulysses;
    const std::vector<double> got = HunyuanVideo15Transformer::load(model, o).forward(hidden, t, text).to_f64_vector();
    ASSERT_EQ(got.size(), want.size());
    const ErrorStats e = compare(got.data(), want.data(), want.size());
    EXPECT_EQ(e.nonfinite, 0u);
    EXPECT_LE(e.rel_l2, 2e-6) << describe(e);
    EXPECT_LE(e.max_abs, 1e-5) << describe(e);
    if (rank() == 0) std::printf("HunyuanVideo-1.5 transformer, %s: %s\n", what.c_str(), describe(e).c_str());
  };
  parallel::ParallelDegrees tp;
  tp.tensor_parallel = size();
  check(tp, "tensor parallel " + std::to_string(size()));
  if (size() == 4) {
    // Each rank holds 2 heads' weights and 16 of the 32 video tokens; its backend runs 1 head over all 32.
    parallel::ParallelDegrees both;
    both.tensor_parallel = 2;
    both.ulysses = 2;
    check(both, "tensor parallel 2 x Ulysses 2");
  }
  fs::remove_all(base);
}

// HunyuanVideo15Transformer::load's own check at 4 ranks: the world as both the tensor-parallel and the
// Ulysses group asks 4 heads to split over 16 (refused when the blocks are built, before any weight).
TEST_F(MpiTensorParallel, HunyuanVideo15TransformerRefusesHeadsThatDoNotSplit) {
  if (size() != 4) GTEST_SKIP() << "at 2 ranks the world as both groups splits the 4 heads over 4: nothing to refuse";
  const std::string base = dir("hv15_heads");
  Hv15RunOptions o;
  o.tensor_parallel = g_world;
  o.ulysses = g_world;
  try {
    (void)HunyuanVideo15Transformer::load(write_hv15_model(base), o);
    ADD_FAILURE() << "4 heads were split over 16";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("4 attention heads do not split over 16 ranks"), std::string::npos)
        << e.what();
  }
  fs::remove_all(base);
}

}  // namespace
}  // namespace dattn::testing
