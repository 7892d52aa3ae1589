// `dattn make-checkpoint` and `dattn transformer` end to end: the golden case reproduced from outside,
// random checkpoints (single file and sharded) that load and run, and bad arguments.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "dattn/attention/metrics.h"
#include "dattn/io/safetensors.h"
#include "dattn/io/safetensors_writer.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

std::string golden(const std::string& rel) { return golden_dir() + "/" + rel; }
const std::string kTinyModel = "wan_tiny/pipeline/transformer";
const std::string kT2vCase = "wan_tiny/cases/transformer_t2v_scalar_t.safetensors";

std::string temp_path(const std::string& tag) {
  // The tag last: it carries the extension `dattn transformer` checks.
  const fs::path p = fs::path(::testing::TempDir()) / ("dattn_cli_wan_" + std::to_string(getpid()) + "_" + tag);
  fs::remove_all(p);
  return p.string();
}

void expect_user_error(const CliResult& r, const std::string& message) {
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ErrorStats compare_files(const std::string& got_path, const std::string& want_path) {
  SafetensorsFile got(got_path), want(want_path);
  const auto g = got.read_f64("output.sample"), w = want.read_f64("output.sample");
  EXPECT_EQ(got.info("output.sample").shape, want.info("output.sample").shape);
  return compare(g.data(), w.data(), std::min(g.size(), w.size()));
}

TEST(CliTransformer, ReproducesTheGoldenOutput) {
  const std::string out = temp_path("t2v_out.safetensors");
  const CliResult r = run_dattn("transformer --device cpu --model " + shell_quote(golden(kTinyModel)) + " --inputs " +
                                shell_quote(golden(kT2vCase)) + " --output " + shell_quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("output.sample [1,8,3,8,12] -> "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vs output.sample in"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("Resolved diffusion attention backend 'FLASH_ATTN' for role='self'"), std::string::npos);
  SafetensorsFile f(out);
  EXPECT_EQ(f.info("output.sample").dtype, "F32");
  const ErrorStats e = compare_files(out, golden(kT2vCase));
  EXPECT_EQ(e.nonfinite, 0u);
  EXPECT_LE(e.rel_l2, 1e-5);
}

TEST(CliTransformer, TakesAttentionFlagsAndRunDtype) {
  const std::string out = temp_path("ti2v_out.safetensors");
  const std::string ti2v = golden("wan_tiny/cases/transformer_ti2v_token_t.safetensors");
  const CliResult r = run_dattn("transformer --device cpu --model " + shell_quote(golden(kTinyModel)) + " --inputs " +
                                shell_quote(ti2v) + " --output " + shell_quote(out) +
                                " --dtype bf16 --diffusion-attention-config.per_role.cross.backend TORCH_SDPA");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("'TORCH_SDPA' for role='cross' (role_category=None) via per_role['cross']"), std::string::npos)
      << r.err;
  const ErrorStats e = compare_files(out, ti2v);
  EXPECT_EQ(e.nonfinite, 0u);
  EXPECT_LE(e.rel_l2, 2e-2);  // bf16
  EXPECT_GT(e.rel_l2, 1e-4);  // and really bf16, not float32
}

TEST(CliTransformer, BadArgumentsAreOneLineErrors) {
  const std::string model = shell_quote(golden(kTinyModel)), inputs = shell_quote(golden(kT2vCase));
  const std::string out = shell_quote(temp_path("bad_out.safetensors"));
  expect_user_error(run_dattn("transformer --device cpu --model " + model + " --inputs " + inputs + " --output " + out + " --dtype int8"),
                    "dattn: error: --dtype 'int8': expected auto, fp32, bf16 or fp16");
  expect_user_error(run_dattn("transformer --model " + model + " --inputs " + inputs + " --output " + out +
                              " --device tpu"),
                    "dattn: error: --device 'tpu': expected auto, cpu or cuda");
  expect_user_error(run_dattn("transformer --model /nonexistent --inputs " + inputs + " --output " + out),
                    "/nonexistent/config.json: cannot open");
  // The layer logs its resolution before it checks it, so the error is the last of two lines.
  const CliResult sage = run_dattn("transformer --device cpu --model " + model + " --inputs " + inputs + " --output " + out +
                                   " --diffusion-attention-backend SAGE_ATTN");
  EXPECT_EQ(sage.status, 2);
  EXPECT_NE(sage.err.find("\ndattn: error: SAGE_ATTN cannot run role 'self' (blocks.0.attn1): dtype fp32 not in "
                          "{bf16, fp16}. Backends that can: FLASH_ATTN, TORCH_SDPA, SPARSE_BLOCK\n"),
            std::string::npos)
      << sage.err;
  // An inputs file without the timestep.
  const std::string partial = temp_path("partial.safetensors");
  SafetensorsFile src(golden(kT2vCase));
  std::vector<WrittenTensor> ts;
  for (const char* name : {"input.hidden_states", "input.encoder_hidden_states"}) {
    const auto& info = src.info(name);
    ts.push_back({name, info.dtype, info.shape,
                  std::vector<std::uint8_t>(src.data(name), src.data(name) + (info.end - info.begin))});
  }
  write_safetensors(partial, ts);
  expect_user_error(run_dattn("transformer --device cpu --model " + model + " --inputs " + shell_quote(partial) + " --output " + out),
                    partial + ": tensor 'input.timestep' not found");
  EXPECT_EQ(run_dattn("transformer --device cpu --model " + model + " --output " + out).status, 2);  // --inputs is required
}

TEST(CliMakeCheckpoint, WritesALoadableDeterministicCheckpoint) {
  const std::string config = golden(kTinyModel + "/config.json");
  const std::string a = temp_path("ckpt_a"), b = temp_path("ckpt_b"), c = temp_path("ckpt_c");
  const CliResult r = run_dattn("make-checkpoint --config " + shell_quote(config) + " --out " + shell_quote(a) + " --seed 5");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("WanTransformer3DModel, 69 tensors"), std::string::npos) << r.out;
  EXPECT_EQ(file_bytes(a + "/config.json"), file_bytes(config));  // copied verbatim
  ASSERT_EQ(run_dattn("make-checkpoint --config " + shell_quote(config) + " --out " + shell_quote(b) + " --seed 5").status, 0);
  ASSERT_EQ(run_dattn("make-checkpoint --config " + shell_quote(config) + " --out " + shell_quote(c) + " --seed 6").status, 0);
  const std::string weights = "/diffusion_pytorch_model.safetensors";
  EXPECT_EQ(file_bytes(a + weights), file_bytes(b + weights));
  EXPECT_NE(file_bytes(a + weights), file_bytes(c + weights));
  SafetensorsFile f(a + weights);
  EXPECT_EQ(f.info("blocks.0.attn1.to_q.weight").dtype, "BF16");
  EXPECT_EQ(f.info("condition_embedder.time_embedder.linear_1.weight").dtype, "F32");  // kept in float32
  EXPECT_EQ(f.info("blocks.1.scale_shift_table").dtype, "F32");
  // Weights at the documented scale: N(0, 1/fan_in) for to_q (fan_in 128), norm gains near 1.
  const auto q = f.read_f64("blocks.0.attn1.to_q.weight");
  double ss = 0;
  for (double v : q) ss += v * v;
  EXPECT_NEAR(std::sqrt(ss / q.size()), 1.0 / std::sqrt(128.0), 0.01);
  for (double v : f.read_f64("blocks.0.norm2.weight")) EXPECT_NEAR(v, 1.0, 0.15);

  const std::string out = temp_path("ckpt_out.safetensors");
  const CliResult run = run_dattn("transformer --device cpu --model " + shell_quote(a) + " --inputs " + shell_quote(golden(kT2vCase)) +
                                  " --output " + shell_quote(out) + " --dtype bf16");
  ASSERT_EQ(run.status, 0) << run.err;
  const auto v = SafetensorsFile(out).read_f64("output.sample");
  double norm = 0;
  for (double x : v) {
    ASSERT_TRUE(std::isfinite(x));
    norm += x * x;
  }
  EXPECT_GT(std::sqrt(norm / v.size()), 0.1);  // a sane, non-degenerate output
  EXPECT_LT(std::sqrt(norm / v.size()), 10.0);
}

TEST(CliMakeCheckpoint, ShardsLikeDiffusersAndLoadsTheSame) {
  const std::string config = golden(kTinyModel + "/config.json");
  const std::string single = temp_path("ckpt_single"), sharded = temp_path("ckpt_sharded");
  ASSERT_EQ(run_dattn("make-checkpoint --config " + shell_quote(config) + " --out " + shell_quote(single) +
                      " --dtype fp32").status, 0);
  const CliResult r = run_dattn("make-checkpoint --config " + shell_quote(config) + " --out " + shell_quote(sharded) +
                                " --dtype fp32 --max-shard-size 300KB");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("weight files + index"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(sharded + "/diffusion_pytorch_model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(sharded + "/diffusion_pytorch_model-00001-of-00008.safetensors"));
  for (const auto& e : fs::directory_iterator(sharded))
    if (e.path().extension() == ".safetensors") {
      EXPECT_LE(fs::file_size(e.path()), 400'000u) << e.path();
    }
  const std::string o1 = temp_path("single_out.safetensors"), o2 = temp_path("sharded_out.safetensors");
  for (const auto& [dir, out] : {std::pair{single, o1}, std::pair{sharded, o2}})
    ASSERT_EQ(run_dattn("transformer --device cpu --model " + shell_quote(dir) + " --inputs " + shell_quote(golden(kT2vCase)) +
                        " --output " + shell_quote(out)).status, 0);
  EXPECT_EQ(compare_files(o1, o2).rel_l2, 0.0);  // same seed, same weights, however stored
}

TEST(CliMakeCheckpoint, BadArgumentsAreOneLineErrors) {
  const std::string config = golden(kTinyModel + "/config.json");
  const std::string out = temp_path("ckpt_bad");
  expect_user_error(run_dattn("make-checkpoint --config " + shell_quote(config) + " --out " + shell_quote(out) + " --dtype int8"),
                    "dattn: error: --dtype 'int8': expected fp32, bf16 or fp16");
  expect_user_error(run_dattn("make-checkpoint --config " + shell_quote(config) + " --out " + shell_quote(out) +
                              " --max-shard-size 5XB"),
                    "--max-shard-size '5XB': expected a whole number with an optional unit");
  fs::create_directories(out);
  std::ofstream(out + "/something") << "x";
  expect_user_error(run_dattn("make-checkpoint --config " + shell_quote(config) + " --out " + shell_quote(out)),
                    "--out '" + out + "' already exists and is not an empty directory; choose a new one");
  const std::string i2v = temp_path("i2v.json");
  std::ofstream(i2v) << R"({"_class_name": "WanTransformer3DModel", "patch_size": [1, 2, 2], "num_attention_heads": 2,
    "attention_head_dim": 64, "in_channels": 36, "out_channels": 16, "text_dim": 32, "freq_dim": 256, "ffn_dim": 128,
    "num_layers": 1, "image_dim": 1280, "added_kv_proj_dim": 5120})";
  expect_user_error(run_dattn("make-checkpoint --config " + shell_quote(i2v) + " --out " + shell_quote(out + "2")),
                    i2v + ": 'image_dim' is 1280: image-to-video conditioning (I2V, CLIP image embeddings) is not supported");
  EXPECT_FALSE(fs::exists(out + "2"));  // nothing written for a config that cannot run
  EXPECT_EQ(run_dattn("make-checkpoint --out " + shell_quote(out)).status, 2);  // --config is required
}

}  // namespace
}  // namespace dattn::testing
