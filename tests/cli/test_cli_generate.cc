// `dattn generate` and `dattn make-pipeline` end to end: the golden pipeline reproduced from outside,
// a seeded run on a random-weight pipeline, and bad arguments refused before any work.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "dattn/attention/metrics.h"
#include "dattn/io/safetensors.h"
#include "support/feature_skip.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

std::string golden(const std::string& rel) { return golden_dir() + "/" + rel; }
const std::string kPipeline = "wan_tiny/pipeline";
const std::string kCase = "wan_tiny/cases/pipeline_t2v_fp32.safetensors";

std::string temp_path(const std::string& tag) {
  const fs::path p = fs::path(::testing::TempDir()) / ("dattn_cli_gen_" + std::to_string(getpid()) + "_" + tag);
  fs::remove_all(p);
  return p.string();
}

// The golden case's settings (pipeline_t2v_fp32.json) with `extra` appended (later flags are errors
// when repeated, so tests replace a flag by building the line themselves).
std::string golden_args(const std::string& output, const std::string& size = "--height 64 --width 96",
                        const std::string& frames = "--num-frames 9") {
  return "generate --device cpu --model " + shell_quote(golden(kPipeline)) +
         " --prompt 'A dog running across a field of golden wheat.' --negative-prompt '' " + size + " " + frames +
         " --num-inference-steps 4 --guidance-scale 5 --output " + shell_quote(output);
}

TEST(CliGenerate, ReproducesTheGoldenPipeline) {
  const std::string out = temp_path("video.safetensors"), report = temp_path("report.json");
  const CliResult r =
      run_dattn(golden_args(out) + " --initial-latents " + shell_quote(golden(kCase)) + " --report " + shell_quote(report));
  ASSERT_EQ(r.status, 0) << r.err;
  // Progress on stderr, one line per step; the summary on stdout.
  EXPECT_NE(r.err.find("step 4/4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Resolved diffusion attention backend 'FLASH_ATTN' for role='self'"), std::string::npos);
  for (const char* s : {"wrote ", "9 frames of 96x64", "role=self backend=FLASH_ATTN", "role=cross backend=FLASH_ATTN",
                        "text encoding", "denoising", "vae decode", "writing", "peak host memory"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " not in:\n" << r.out;

  SafetensorsFile got(out), want(golden(kCase));
  EXPECT_EQ(got.info("video").shape, (std::vector<std::int64_t>{9, 64, 96, 3}));
  const auto g = got.read_f64("video"), w = want.read_f64("output.video");
  ASSERT_EQ(g.size(), w.size());
  const ErrorStats e = compare(g.data(), w.data(), w.size());
  EXPECT_EQ(e.nonfinite, 0u);
  EXPECT_LE(e.rel_l2, 1e-5) << describe(e);

  std::ifstream in(report);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("frames"), 9);
  EXPECT_EQ(j.at("guidance"), "sequential");
  EXPECT_EQ(j.at("attention").size(), 2u);
  // start-up, the three loads, text encoding, denoising, vae decode, writing: they add up to the total.
  ASSERT_EQ(j.at("stages").size(), 8u);
  EXPECT_EQ(j.at("stages")[0].at("stage"), "start-up");
  double stage_sum = 0;
  for (const auto& stage : j.at("stages")) stage_sum += stage.at("ms").get<double>();
  EXPECT_LE(stage_sum, j.at("total_ms").get<double>() + 0.01);
  EXPECT_GE(stage_sum, 0.9 * j.at("total_ms").get<double>()) << j.at("stages").dump();
  EXPECT_GT(j.at("peak_host_rss_bytes").get<std::int64_t>(), 0);
  fs::remove(out);
  fs::remove(report);
}

// With guidance off (scale <= 1) the report said the strategy asked for, "batched", though none ran.
TEST(CliGenerate, TheReportSaysGuidanceOffWhenItDidNotRun) {
  const std::string out = temp_path("noguide.safetensors"), report = temp_path("noguide.json");
  std::string args = golden_args(out, "--height 64 --width 96", "--num-frames 5");
  args.replace(args.find("--guidance-scale 5"), 18, "--guidance-scale 1");
  const CliResult r = run_dattn(args + " --guidance batched --report " + shell_quote(report));
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(report);
  EXPECT_EQ(nlohmann::json::parse(in).at("guidance"), "off");
  fs::remove(out);
  fs::remove(report);
}

TEST(CliGenerate, SeededRunOnARandomPipelineWritesAnMp4) {
  DATTN_SKIP_WITHOUT_FFMPEG();
  const std::string model = temp_path("model"), out = temp_path("video.mp4");
  const std::string configs = golden(kPipeline);
  const CliResult made = run_dattn(
      "make-pipeline --transformer-config " + shell_quote(configs + "/transformer/config.json") + " --vae-config " +
      shell_quote(configs + "/vae/config.json") + " --text-encoder-config " +
      shell_quote(configs + "/text_encoder/config.json") + " --tokenizer " + shell_quote(configs + "/tokenizer") +
      " --scheduler-config " + shell_quote(configs + "/scheduler/scheduler_config.json") + " --out " + shell_quote(model));
  ASSERT_EQ(made.status, 0) << made.err;
  const CliResult r = run_dattn("generate --device cpu --model " + shell_quote(model) +
                                " --prompt 'a red fox' --height 64 --width 64 --num-frames 5 --num-inference-steps 2"
                                " --seed 3 --output " + shell_quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("seed 3"), std::string::npos) << r.out;
  EXPECT_GT(fs::file_size(out), 0u);
  fs::remove_all(model);
  fs::remove(out);
}

void expect_refused(const std::string& args, const std::string& output, const std::string& message) {
  const CliResult r = run_dattn(args);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;  // no work started
  EXPECT_FALSE(fs::exists(output)) << output;
}

// make-pipeline wrote every component (37 GB at full size) before its final check refused a scheduler of another
// class or a guider it does not run, naming its own copy of the file: now the user's file, before any writing.
TEST(CliMakePipeline, RefusesItsInputsBeforeWriting) {
  const std::string dir = temp_path("mp_inputs"), out = temp_path("mp_out");
  fs::create_directories(dir);
  const std::string wan = golden(kPipeline), hv = golden("hv15_tiny/pipeline");
  nlohmann::json ddim = nlohmann::json::parse(std::ifstream(wan + "/scheduler/scheduler_config.json"));
  ddim["_class_name"] = "DDIMScheduler";
  std::ofstream(dir + "/ddim.json") << ddim.dump();
  expect_refused("make-pipeline --transformer-config " + shell_quote(wan + "/transformer/config.json") +
                     " --vae-config " + shell_quote(wan + "/vae/config.json") + " --text-encoder-config " +
                     shell_quote(wan + "/text_encoder/config.json") + " --tokenizer " + shell_quote(wan + "/tokenizer") +
                     " --scheduler-config " + shell_quote(dir + "/ddim.json") + " --out " + shell_quote(out),
                 out, dir + "/ddim.json: scheduler class \"DDIMScheduler\" is not implemented");
  nlohmann::json guider = nlohmann::json::parse(std::ifstream(hv + "/guider/guider_config.json"));
  guider["guidance_rescale"] = 0.7;
  std::ofstream(dir + "/guider.json") << guider.dump();
  expect_refused("make-pipeline --transformer-config " + shell_quote(hv + "/transformer/config.json") + " --vae-config " +
                     shell_quote(hv + "/vae/config.json") + " --text-encoder-config " +
                     shell_quote(hv + "/text_encoder/config.json") + " --tokenizer " + shell_quote(hv + "/tokenizer") +
                     " --scheduler-config " + shell_quote(hv + "/scheduler/scheduler_config.json") +
                     " --text-encoder-2-config " + shell_quote(hv + "/text_encoder_2/config.json") + " --tokenizer-2 " +
                     shell_quote(hv + "/tokenizer_2") + " --guider-config " + shell_quote(dir + "/guider.json") +
                     " --out " + shell_quote(out),
                 out, dir + "/guider.json: 'guidance_rescale' is set");
  // Another family's inputs are refused, not ignored.
  expect_refused("make-pipeline --transformer-config " + shell_quote(wan + "/transformer/config.json") +
                     " --vae-config " + shell_quote(wan + "/vae/config.json") + " --text-encoder-config " +
                     shell_quote(wan + "/text_encoder/config.json") + " --tokenizer " + shell_quote(wan + "/tokenizer") +
                     " --scheduler-config " + shell_quote(wan + "/scheduler/scheduler_config.json") +
                     " --guider-config " + shell_quote(hv + "/guider/guider_config.json") + " --out " + shell_quote(out),
                 out, "--guider-config is for a HunyuanVideo-1.5 pipeline");
  fs::remove_all(dir);
}

// The output the refusals are checked with: an mp4 where this build writes one; a build without FFmpeg
// (DATTN_VIDEO=off) would refuse the .mp4 itself before the argument under test.
#ifdef DATTN_WITH_FFMPEG
constexpr const char* kVideoName = "video.mp4";
#else
constexpr const char* kVideoName = "video.safetensors";
#endif

TEST(CliGenerate, RefusesBadArgumentsBeforeAnyWork) {
  const std::string out = temp_path(std::string("bad_") + kVideoName);
  expect_refused(golden_args(out, "--height 60 --width 96"), out, "--height 60 must be a positive multiple of 32");
  expect_refused(golden_args(out, "--height 64 --width 100"), out, "--width 100 must be a positive multiple of 32");
  expect_refused(golden_args(out, "--height 64 --width 96", "--num-frames 8"), out, "--num-frames 8 must be 4k+1");
  const std::string missing = temp_path("no_such_model");
  expect_refused("generate --model " + shell_quote(missing) +
                     " --prompt x --height 64 --width 96 --num-frames 9 --num-inference-steps 1 --output " +
                     shell_quote(out),
                 out, "no such directory");
  // A missing folder is made (tests/cli/test_cli_front_door.cc); a file in its way is refused.
  const std::string in_the_way = temp_path("a_file");
  std::ofstream(in_the_way) << "x";
  const std::string unwritable = in_the_way + "/" + kVideoName;
  expect_refused(golden_args(unwritable), unwritable, "cannot create folder '" + in_the_way + "'");
  fs::remove(in_the_way);
  expect_refused(golden_args(temp_path("bad.avi")), temp_path("bad.avi"), ".avi");
  expect_refused(golden_args(out) + " --validate-against NOPE", out, "Unknown diffusion attention backend: 'NOPE'");
  expect_refused(golden_args(out) + " --validate-min-psnr 30", out, "--validate-min-psnr needs --validate-against");
  expect_refused(golden_args(out) + " --validate-against FLASH_ATTN --validate-warmup-steps -1", out,
                 "--validate-warmup-steps");
  expect_refused(golden_args(out) + " --validate-quantization none", out,
                 "--validate-quantization needs --validate-against");
  expect_refused(golden_args(out) + " --validate-against FLASH_ATTN --validate-quantization int4", out,
                 "--validate-quantization 'int4': expected fp8 or none");
}

// --quantization: fp8 runs on the CPU (the emulation of the CUDA arithmetic) and says so in the summary,
// the video within the pipeline test's fp32 + fp8 bound of the golden one (tests/pipeline/
// test_wan_pipeline_fp8.cc, 1.2e-3 measured); any other value is a one-line refusal naming it and the choices.
TEST(CliGenerate, QuantizationFp8RunsOnTheCpuAndOtherValuesAreRefused) {
  const std::string bad = temp_path(std::string("q_") + kVideoName);
  expect_refused(golden_args(bad) + " --quantization int4", bad, "--quantization 'int4': expected fp8 or none");
  const std::string out = temp_path("fp8.safetensors");
  const CliResult r = run_dattn(golden_args(out) + " --initial-latents " + shell_quote(golden(kCase)) +
                                " --quantization fp8");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("cpu fp32 (fp8 linears))"), std::string::npos) << r.out;
  SafetensorsFile got(out), want(golden(kCase));
  const auto g = got.read_f64("video"), w = want.read_f64("output.video");
  ASSERT_EQ(g.size(), w.size());
  const ErrorStats e = compare(g.data(), w.data(), w.size());
  EXPECT_EQ(e.nonfinite, 0u);
  EXPECT_LE(e.rel_l2, 2.5e-3) << describe(e);
  EXPECT_GT(e.rel_l2, 1e-5) << "no quantization error: did fp8 run?";
  fs::remove(out);
}

// --op-times: the ops' time per stage group, on stdout and in the report; the denoising ops (gemm,
// attention, norms: none nested in another) cannot add up to more than the stage's wall time.
TEST(CliGenerate, OpTimesReportTheOpsOfEachStageGroup) {
  const std::string out = temp_path("ops.safetensors"), plain_out = temp_path("plain.safetensors"),
                    report = temp_path("ops.json");
  const CliResult r = run_dattn(golden_args(out) + " --op-times --report " + shell_quote(report));
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"op time in text encoder", "op time in denoising", "op time in vae decode", "gemm", "attention",
                        "causal_conv3d"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " not in:\n" << r.out;
  std::ifstream in(report);
  const nlohmann::json j = nlohmann::json::parse(in);
  const nlohmann::json& ops = j.at("op_ms");
  for (const char* group : {"text encoder", "denoising", "vae decode"}) EXPECT_TRUE(ops.contains(group)) << ops.dump();
  double denoising_ops = 0;
  for (const auto& [op, ms] : ops.at("denoising").items()) {
    EXPECT_GE(ms.get<double>(), 0.0) << op;
    denoising_ops += ms.get<double>();
  }
  EXPECT_GT(ops.at("denoising").at("gemm").get<double>(), 0.0);
  EXPECT_GT(ops.at("denoising").at("attention").get<double>(), 0.0);
  double denoising_wall = -1;
  for (const auto& stage : j.at("stages"))
    if (stage.at("stage") == "denoising") denoising_wall = stage.at("ms").get<double>();
  ASSERT_GT(denoising_wall, 0.0) << j.at("stages").dump();
  EXPECT_LE(denoising_ops, denoising_wall) << ops.at("denoising").dump();
  // Without the flag the report has no op times.
  const CliResult plain = run_dattn(golden_args(plain_out) + " --report " + shell_quote(report));
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(plain.out.find("op time in"), std::string::npos) << plain.out;
  std::ifstream in2(report);
  EXPECT_TRUE(nlohmann::json::parse(in2).at("op_ms").empty());
  fs::remove(out);
  fs::remove(plain_out);
  fs::remove(report);
}

// TORCH_SDPA and FLASH_ATTN are both exact: the validation sees the same video up to fp32 rounding,
// times both runs, and reports each run's backends.
TEST(CliGenerate, ValidatesAgainstABaselineBackend) {
  const std::string out = temp_path("validated.safetensors"), report = temp_path("validated.json");
  const CliResult r = run_dattn(golden_args(out) + " --diffusion-attention-backend TORCH_SDPA --validate-against "
                                "flash_attn --report " + shell_quote(report));
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"validation against FLASH_ATTN", "this run:  self=TORCH_SDPA, cross=TORCH_SDPA",
                        "baseline:  self=FLASH_ATTN, cross=FLASH_ATTN", "end to end", "DiT stage", "median step",
                        "video PSNR", "latents        rel L2"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " not in:\n" << r.out;
  EXPECT_NE(r.err.find("[dattn baseline] step 4/4"), std::string::npos) << r.err;
  std::ifstream in(report);
  const nlohmann::json v = nlohmann::json::parse(in).at("validation");
  EXPECT_EQ(v.at("baseline"), "FLASH_ATTN");
  EXPECT_EQ(v.at("warmup_steps"), 1);  // the default
  EXPECT_NE(r.err.find("[dattn] warm-up: 1 step(s) with each of 2 configurations"), std::string::npos) << r.err;
  EXPECT_EQ(v.at("this_run").at("attention").at("self"), "TORCH_SDPA");
  EXPECT_EQ(v.at("baseline_run").at("attention").at("cross"), "FLASH_ATTN");
  EXPECT_GT(v.at("baseline_run").at("dit_ms").get<double>(), 0.0);
  EXPECT_GT(v.at("this_run").at("median_step_ms").get<double>(), 0.0);
  // The two exact backends round differently in fp32: a run compared with itself would say identical.
  EXPECT_FALSE(v.at("identical").get<bool>()) << v.dump();
  EXPECT_GT(v.at("psnr_db").get<double>(), 90.0) << v.dump();
  EXPECT_GT(v.at("latents_rel_l2").get<double>(), 0.0) << v.dump();
  EXPECT_LT(v.at("latents_rel_l2").get<double>(), 1e-4) << v.dump();
  EXPECT_GT(v.at("latents_cosine").get<double>(), 0.999999) << v.dump();
  fs::remove(out);
  fs::remove(report);
}

// --validate-quantization none measures what fp8 linears cost against the unquantized ones; without it
// the baseline keeps the run's quantization (same backend and fp8 on both sides: the same video).
TEST(CliGenerate, ValidatesFp8LinearsAgainstTheUnquantizedRun) {
  const std::string out = temp_path("fp8v.safetensors"), report = temp_path("fp8v.json");
  const std::string fp8 = golden_args(out) + " --initial-latents " + shell_quote(golden(kCase)) +
                          " --quantization fp8 --validate-against FLASH_ATTN --validate-warmup-steps 0 --report " +
                          shell_quote(report);
  const CliResult r = run_dattn(fp8 + " --validate-quantization none");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("; linears fp8\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("baseline:  self=FLASH_ATTN, cross=FLASH_ATTN; linears unquantized"), std::string::npos) << r.out;
  nlohmann::json v = nlohmann::json::parse(std::ifstream(report)).at("validation");
  EXPECT_EQ(v.at("this_run").at("quantization"), "fp8");
  EXPECT_EQ(v.at("baseline_run").at("quantization"), "none");
  EXPECT_FALSE(v.at("identical").get<bool>()) << v.dump();
  // The fp32 + fp8 video is within 2.5e-3 rel L2 of the golden one (the test above), so of the exact run.
  EXPECT_GT(v.at("latents_rel_l2").get<double>(), 1e-5) << v.dump();
  EXPECT_LT(v.at("video_rel_l2").get<double>(), 5e-3) << v.dump();
  const CliResult same = run_dattn(fp8);
  ASSERT_EQ(same.status, 0) << same.err;
  v = nlohmann::json::parse(std::ifstream(report)).at("validation");
  EXPECT_EQ(v.at("baseline_run").at("quantization"), "fp8");
  EXPECT_TRUE(v.at("identical").get<bool>()) << v.dump();
  fs::remove(out);
  fs::remove(report);
}

// A lossy configuration below the required PSNR: exit status 3 with the measured value, and nothing
// lost (the video and the report are written first).
TEST(CliGenerate, ValidationBelowTheMinimumPsnrFails) {
  const std::string out = temp_path("lossy.safetensors"), report = temp_path("lossy.json");
  const CliResult r = run_dattn(golden_args(out) +
                                " --diffusion-attention-backend SPARSE_BLOCK"
                                " --diffusion-attention-config.default.extra.block_size 64"
                                " --diffusion-attention-config.default.extra.density 0.5"
                                " --validate-against FLASH_ATTN --validate-min-psnr 80 --validate-warmup-steps 0"
                                " --report " + shell_quote(report));
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("no warm-up: the first run paid"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("warm-up:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("validation failed: video PSNR"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("against FLASH_ATTN is below --validate-min-psnr 80"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(out));
  std::ifstream in(report);
  const nlohmann::json v = nlohmann::json::parse(in).at("validation");
  EXPECT_FALSE(v.at("identical").get<bool>());
  EXPECT_EQ(v.at("warmup_steps"), 0);
  EXPECT_LT(v.at("psnr_db").get<double>(), 80.0);
  EXPECT_GT(v.at("psnr_db").get<double>(), 20.0);  // lossy, not broken
  fs::remove(out);
  fs::remove(report);
}

}  // namespace
}  // namespace dattn::testing
