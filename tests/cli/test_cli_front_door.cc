// A newcomer's first commands, run as a user would: Hugging Face ids from a cache laid out here as
// huggingface_hub writes it, --device/--dtype auto, output folders made and existing outputs replaced
// whole, seeds out of range, unknown commands, and the two commands `dattn --help` ends with.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "dattn/core/auto_choice.h"
#include "support/feature_skip.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

const std::string kCommit = "5d1a3c0b2e4f60718293a4b5c6d7e8f901234567";

std::string golden(const std::string& rel) { return golden_dir() + "/" + rel; }

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliFrontDoor : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("dattn_cli_front_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // HUB/models--ORG--NAME holding the golden tiny pipeline as huggingface_hub stores a download: each
  // file's bytes in blobs/, snapshots/<commit>/<file> a relative symlink to them, refs/main the commit.
  std::string make_cache(const std::string& org, const std::string& name) {
    const fs::path hub = dir_ / "hub", repo = hub / ("models--" + org + "--" + name);
    const fs::path src = golden("wan_tiny/pipeline");
    fs::create_directories(repo / "blobs");
    int blob = 0;
    for (const auto& e : fs::recursive_directory_iterator(src)) {
      if (!e.is_regular_file()) continue;
      const fs::path rel = fs::relative(e.path(), src);
      const std::string blob_name = "blob" + std::to_string(blob++);
      fs::copy_file(e.path(), repo / "blobs" / blob_name);
      const fs::path link = repo / "snapshots" / kCommit / rel;
      fs::create_directories(link.parent_path());
      fs::path up = "../..";  // <commit>/ and snapshots/
      for ([[maybe_unused]] const fs::path& part : rel.parent_path()) up /= "..";
      fs::create_symlink(up / "blobs" / blob_name, link);
    }
    fs::create_directories(repo / "refs");
    std::ofstream(repo / "refs" / "main") << kCommit;
    return hub.string();
  }

  fs::path dir_;
};

// A one-step run of the golden tiny pipeline with `model` and `extra` flags.
std::string generate_args(const std::string& model, const std::string& output, const std::string& extra = "") {
  return "generate --model " + shell_quote(model) +
         " --prompt 'A dog running across a field of golden wheat.' --height 64 --width 96 --num-frames 9"
         " --num-inference-steps 1 --output " + shell_quote(output) + (extra.empty() ? "" : " " + extra);
}

void expect_user_error(const CliResult& r, const std::string& message) {
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "stderr: " << r.err;
}

TEST_F(CliFrontDoor, HuggingFaceIdRunsFromTheLocalCache) {
  const std::string hub = make_cache("Wan-AI", "Wan-Tiny-Diffusers");
  const std::string env = "HF_HUB_CACHE=" + shell_quote(hub);
  const std::string snapshot = hub + "/models--Wan-AI--Wan-Tiny-Diffusers/snapshots/" + kCommit;
  const CliResult r = run_dattn(generate_args("Wan-AI/Wan-Tiny-Diffusers", path("v.safetensors")), env);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("[dattn] --model Wan-AI/Wan-Tiny-Diffusers: Hugging Face cache: " + snapshot + " (refs/main)"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(path("v.safetensors")));
  // The commit given as the revision, and HF_HOME/hub when HF_HUB_CACHE is unset.
  const std::string hf_home = "HF_HOME=" + shell_quote(dir_.string()) + " env -u HF_HUB_CACHE";
  const CliResult by_hash =
      run_dattn(generate_args("Wan-AI/Wan-Tiny-Diffusers", path("w.safetensors"), "--revision " + kCommit), hf_home);
  ASSERT_EQ(by_hash.status, 0) << by_hash.err;
  EXPECT_NE(by_hash.err.find("(commit " + kCommit + ")"), std::string::npos) << by_hash.err;
  // `dattn transformer` takes the same id and runs the pipeline's transformer/.
  const CliResult t = run_dattn("transformer --model Wan-AI/Wan-Tiny-Diffusers --inputs " +
                                    shell_quote(golden("wan_tiny/cases/transformer_t2v_scalar_t.safetensors")) +
                                    " --output " + shell_quote(path("t.safetensors")),
                                env);
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.err.find("running its transformer, " + snapshot + "/transformer"), std::string::npos) << t.err;
  EXPECT_NE(t.out.find("vs output.sample in"), std::string::npos) << t.out;
}

TEST_F(CliFrontDoor, MissingHuggingFaceIdSaysWhereItLookedAndHowToDownload) {
  const std::string env = "HF_HUB_CACHE=" + shell_quote(path("empty-hub"));
  const std::string out = path("v.safetensors");
  const CliResult r = run_dattn(generate_args("Wan-AI/Wan2.2-TI2V-5B-Diffusers", out), env);
  expect_user_error(r, "dattn: error: --model 'Wan-AI/Wan2.2-TI2V-5B-Diffusers': no such folder, and not in the "
                       "Hugging Face cache: no folder '" + path("empty-hub") +
                       "/models--Wan-AI--Wan2.2-TI2V-5B-Diffusers' (cache: $HF_HUB_CACHE). Download it with "
                       "'huggingface-cli download Wan-AI/Wan2.2-TI2V-5B-Diffusers'");
  EXPECT_NE(r.err.find("--local-dir DIR' and pass --model DIR"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  // A branch that was not downloaded, named in the download command.
  const std::string hub = make_cache("o", "m");
  expect_user_error(run_dattn(generate_args("o/m", out, "--revision v2"), "HF_HUB_CACHE=" + shell_quote(hub)),
                    "no ref '" + hub + "/models--o--m/refs/v2'");
  // --revision with a folder is a mistake, not ignored.
  expect_user_error(run_dattn(generate_args(golden("wan_tiny/pipeline"), out, "--revision main")),
                    "--revision 'main' is for Hugging Face ids (ORG/NAME)");
}

TEST_F(CliFrontDoor, DeviceAndDtypeDefaultToAuto) {
  const Device device = auto_device();  // the CPU here; CUDA on a GPU machine
  const std::string expect =
      std::string(device_name(device)) + " " + std::string(dtype_name(auto_run_dtype(device))) + ")";
  const std::string model = golden("wan_tiny/pipeline");
  for (const std::string flags : {"", "--device auto --dtype auto"}) {
    const CliResult r = run_dattn(generate_args(model, path("v.safetensors"), flags));
    ASSERT_EQ(r.status, 0) << flags << ": " << r.err;
    EXPECT_NE(r.out.find(expect), std::string::npos) << flags << ": " << r.out;
    const CliResult t = run_dattn("transformer --model " + shell_quote(model + "/transformer") + " --inputs " +
                                  shell_quote(golden("wan_tiny/cases/transformer_t2v_scalar_t.safetensors")) +
                                  " --output " + shell_quote(path("t.safetensors")) + " " + flags);
    ASSERT_EQ(t.status, 0) << flags << ": " << t.err;
    EXPECT_NE(t.out.find(expect), std::string::npos) << flags << ": " << t.out;
  }
  expect_user_error(run_dattn(generate_args(model, path("v.safetensors"), "--device tpu")),
                    "--device 'tpu': expected auto, cpu or cuda");
  expect_user_error(run_dattn(generate_args(model, path("v.safetensors"), "--dtype fp8")),
                    "--dtype 'fp8': expected auto, fp32, bf16 or fp16");
}

// --load-ahead on (the CPU too): the transformer and the VAE load beside the earlier stages, the summary
// lists them with their own time, the JSON report carries them, and the video is the bytes of a run
// without (off). A value that is not auto, on or off is refused before any work.
TEST_F(CliFrontDoor, LoadAheadListsTheLoadsThatRanBesideAndChangesNoByte) {
  const std::string model = golden("wan_tiny/pipeline");
  const CliResult on = run_dattn(generate_args(model, path("on.safetensors"),
                                               "--device cpu --load-ahead on --report " + shell_quote(path("on.json"))));
  ASSERT_EQ(on.status, 0) << on.err;
  EXPECT_NE(on.out.find("loaded beside other stages (their own time):\n  load transformer"), std::string::npos) << on.out;
  const nlohmann::json report = nlohmann::json::parse(std::ifstream(path("on.json")));
  ASSERT_EQ(report.at("loaded_ahead").size(), 2u) << report.dump();
  EXPECT_EQ(report.at("loaded_ahead")[1].at("stage"), "load vae");
  const CliResult off = run_dattn(generate_args(model, path("off.safetensors"), "--device cpu --load-ahead off"));
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_EQ(off.out.find("loaded beside"), std::string::npos) << off.out;
  std::ifstream a(path("on.safetensors"), std::ios::binary), b(path("off.safetensors"), std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}), std::string(std::istreambuf_iterator<char>(b), {}));
  expect_user_error(run_dattn(generate_args(model, path("v.safetensors"), "--load-ahead soon")),
                    "--load-ahead 'soon': expected auto, on or off");
}

// The seed's command shape on the dtype a GPU's auto gives: SAGE_ATTN from the environment runs.
TEST_F(CliFrontDoor, EnvironmentSageAttnRunsAtTheCudaAutoDtype) {
  ASSERT_EQ(auto_run_dtype(Device::CUDA), DType::BF16);
  const CliResult r = run_dattn(generate_args(golden("wan_tiny/pipeline"), path("v.safetensors"),
                                              "--device cpu --dtype bf16"),
                                "DIFFUSION_ATTENTION_BACKEND=SAGE_ATTN");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("role=self backend=SAGE_ATTN extra={} source=env DIFFUSION_ATTENTION_BACKEND"),
            std::string::npos)
      << r.out;
}

TEST_F(CliFrontDoor, OutputAndReportFoldersAreMade) {
  const std::string model = golden("wan_tiny/pipeline");
  const std::string out = path("videos/today/v.safetensors"), report = path("reports/r.json");
  const CliResult r = run_dattn(generate_args(model, out, "--report " + shell_quote(report)));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(out));
  EXPECT_EQ(nlohmann::json::parse(read(report)).at("frames"), 9);
  // A file where a folder should be made.
  std::ofstream(path("file")) << "x";
  expect_user_error(run_dattn(generate_args(model, path("file/v.safetensors"))),
                    "output '" + path("file/v.safetensors") + "': cannot create folder '" + path("file") + "'");
}

// Existing output and report, each with a hard link: a file rewritten in place would change the link's
// bytes; a file written aside and renamed over it leaves them.
TEST_F(CliFrontDoor, ExistingOutputAndReportAreReplacedWhole) {
  const std::string out = path("v.safetensors"), report = path("r.json");
  std::ofstream(out, std::ios::binary) << "old video";
  std::ofstream(report, std::ios::binary) << "old report";
  fs::create_hard_link(out, path("video.link"));
  fs::create_hard_link(report, path("report.link"));
  const CliResult r = run_dattn(generate_args(golden("wan_tiny/pipeline"), out, "--report " + shell_quote(report)));
  ASSERT_EQ(r.status, 0) << r.err;
  // Compared as booleans: on failure gtest would print the whole video.
  EXPECT_TRUE(read(path("video.link")) == "old video") << "the old video was rewritten in place";
  EXPECT_TRUE(read(path("report.link")) == "old report") << "the old report was rewritten in place";
  EXPECT_EQ(nlohmann::json::parse(read(report)).at("frames"), 9);
  EXPECT_GT(fs::file_size(out), 9u);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".dattn-tmp-"), std::string::npos) << e.path();
}

TEST_F(CliFrontDoor, ReportPathIsCheckedBeforeTheRun) {
  const std::string out = path("v.safetensors");
  fs::create_directories(path("a-folder.json"));
  const CliResult r =
      run_dattn(generate_args(golden("wan_tiny/pipeline"), out, "--report " + shell_quote(path("a-folder.json"))));
  expect_user_error(r, "--report '" + path("a-folder.json") + "' is a folder, expected a file name");
  EXPECT_FALSE(fs::exists(out)) << "the run started before the report path was checked";
}

TEST_F(CliFrontDoor, TransformerWritesOnlySafetensors) {
  const std::string args = "transformer --model " + shell_quote(golden("wan_tiny/pipeline/transformer")) +
                           " --inputs " + shell_quote(golden("wan_tiny/cases/transformer_t2v_scalar_t.safetensors")) +
                           " --output ";
  expect_user_error(run_dattn(args + shell_quote(path("out.mp4"))),
                    "--output '" + path("out.mp4") + "': dattn transformer writes a .safetensors file (tensor "
                    "output.sample), got extension '.mp4'");
  EXPECT_FALSE(fs::exists(path("out.mp4")));
  const CliResult r = run_dattn(args + shell_quote(path("new/folder/out.safetensors")));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(path("new/folder/out.safetensors")));
}

TEST_F(CliFrontDoor, SeedsOutsideZeroTo2To64AreErrors) {
  const std::string model = golden("wan_tiny/pipeline"), out = path("v.safetensors");
  for (const char* seed : {"-1", "18446744073709551616", "99999999999999999999999", "1e3", "0x10", "+5", " 5"})
    expect_user_error(run_dattn(generate_args(model, out, "--seed " + shell_quote(seed))),
                      "--seed '" + std::string(seed) + "': expected a whole number from 0 to 18446744073709551615");
  expect_user_error(run_dattn("make-checkpoint --config x.json --out " + shell_quote(path("c")) + " --seed -1"),
                    "--seed '-1': expected a whole number from 0 to 18446744073709551615");
  expect_user_error(run_dattn("make-pipeline --transformer-config a --vae-config b --text-encoder-config c "
                              "--tokenizer d --scheduler-config e --out " + shell_quote(path("p")) + " --seed -1"),
                    "--seed '-1': expected a whole number from 0 to 18446744073709551615");
  EXPECT_FALSE(fs::exists(out));
  // The largest seed runs as itself.
  const CliResult r = run_dattn(generate_args(model, out, "--seed 18446744073709551615 --report " +
                                                              shell_quote(path("r.json"))));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read(path("r.json"))).at("seed").get<std::uint64_t>(), 18446744073709551615ull);
}

TEST_F(CliFrontDoor, UnknownCommandListsTheCommands) {
  expect_user_error(run_dattn("run --model x"),
                    "dattn: error: unknown command 'run'; commands are: resolve, backends, attention, "
                    "make-checkpoint, transformer, make-pipeline, generate");
  expect_user_error(run_dattn("--diffusion-attention-backend FLASH_ATTN genrate"), "unknown command 'genrate'");
  EXPECT_EQ(run_dattn("--version").status, 0);
}

// CLI11's own texts were "Could not convert: --fps = abc", "--height: At Most 1 required but received 2"
// and stray arguments listed backwards ("0 --max-sequence-length").
TEST_F(CliFrontDoor, ParseErrorsSayWhatWasWrongInTheUsersOrder) {
  const std::string model = golden("wan_tiny/pipeline"), out = path("v.safetensors");
  expect_user_error(run_dattn(generate_args(model, out, "--fps abc")), "dattn: error: --fps 'abc': expected a whole number");
  expect_user_error(run_dattn(generate_args(model, out, "--steps-typo 1")),
                    "unexpected arguments: --steps-typo 1 (`dattn generate --help` lists the options)");
  expect_user_error(run_dattn(generate_args(model, out, "stray")), "unexpected argument: stray (");
  expect_user_error(run_dattn(generate_args(model, out, "--guidance-scale high")),
                    "--guidance-scale 'high': expected a number");
  expect_user_error(run_dattn(generate_args(model, out, "--fps 100000000000")),
                    "--fps '100000000000': expected a whole number from 0 to 2147483647 (decimal digits only)");
  expect_user_error(run_dattn(generate_args(model, out, "--fps 241")), "--fps 241 must be from 1 to 240");
  expect_user_error(run_dattn(generate_args(model, out, "--model " + shell_quote(model))),
                    "--model is given 2 times; give it once");
  expect_user_error(run_dattn(generate_args(model, out, "--height=32")), "--height is given 2 times; give it once");
  EXPECT_FALSE(fs::exists(out));
}

// The two commands `dattn --help` ends with, run as printed from a folder laid out as a clone.
TEST_F(CliFrontDoor, HelpEndsWithTwoCommandsThatRun) {
  DATTN_SKIP_WITHOUT_FFMPEG();  // the example writes an mp4
  const CliResult help = run_dattn("--help");
  ASSERT_EQ(help.status, 0);
  std::vector<std::string> lines;
  std::istringstream in(help.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  ASSERT_GE(lines.size(), 2u);
  const std::string make = lines[lines.size() - 2], gen = lines.back();
  ASSERT_EQ(make.rfind("  dattn make-pipeline ", 0), 0u) << make;
  ASSERT_EQ(gen.rfind("  dattn generate ", 0), 0u) << gen;
  const fs::path source = fs::path(golden_dir()).parent_path().parent_path();
  fs::create_directories(dir_ / "tests");
  fs::create_directory_symlink(source / "scripts", dir_ / "scripts");
  fs::create_directory_symlink(source / "tests" / "golden", dir_ / "tests" / "golden");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  const CliResult made = run_dattn(make.substr(std::string("  dattn ").size()));
  const CliResult video = run_dattn(gen.substr(std::string("  dattn ").size()));
  fs::current_path(cwd);
  ASSERT_EQ(made.status, 0) << made.err;
  ASSERT_EQ(video.status, 0) << video.err;
  EXPECT_TRUE(fs::is_regular_file(dir_ / "demo-model" / "model_index.json"));
  EXPECT_GT(fs::file_size(dir_ / "fox.mp4"), 0u);
}

}  // namespace
}  // namespace dattn::testing
