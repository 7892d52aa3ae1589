// What `dattn generate` and `dattn transformer` do with what already stands at an output path (issue 49):
// a rename replaced a device, a FIFO or /dev/stdout with a regular file and exited 0. Now a regular file
// is replaced, a symlink's target gets the bytes (the link stays), the JSON report is streamed to stdout,
// a FIFO or a character device, and any other special file, or an input of the run, is refused in one line.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "support/feature_skip.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

const std::string kSize = "--height 64 --width 96 --num-frames 5 --num-inference-steps 2";

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliOutputPlaces : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / ("dattn_cli_places_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string pipeline() { return golden_dir() + "/wan_tiny/pipeline"; }
  std::string generate(const std::string& output, const std::string& extra = "",
                       const std::string& model = pipeline()) const {
    return "generate --device cpu --model " + shell_quote(model) + " --prompt 'a dog' " + kSize + " --output " +
           shell_quote(output) + " " + extra;
  }
  void expect_refused(const CliResult& r, const std::string& message) const {
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << "expected '" << message << "' in: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  void fifo(const std::string& name) const { ASSERT_EQ(::mkfifo(path(name).c_str(), 0600), 0); }

  fs::path dir_;
};

// A video needs a regular file: a FIFO, a link to /dev/null and a PNG frame's FIFO are refused before any
// work, and each is still what it was.
TEST_F(CliOutputPlaces, VideoOutputOnASpecialFileIsRefused) {
  fifo("v.safetensors");
  expect_refused(run_dattn(generate(path("v.safetensors"))),
                 "output '" + path("v.safetensors") + "' is a FIFO (named pipe), where this file cannot be streamed");
  EXPECT_TRUE(fs::is_fifo(path("v.safetensors")));
  fs::create_symlink("/dev/null", path("null.safetensors"));
  expect_refused(run_dattn(generate(path("null.safetensors"))), "is a character device");
  EXPECT_TRUE(fs::is_symlink(path("null.safetensors")));
}

TEST_F(CliOutputPlaces, PngFrameOnAFifoIsRefused) {
  DATTN_SKIP_WITHOUT_FFMPEG();
  fifo("seq_0002.png");
  expect_refused(run_dattn(generate(path("seq.png"))), "frame 2's file '" + path("seq_0002.png") + "' is a FIFO");
  EXPECT_TRUE(fs::is_fifo(path("seq_0002.png")));
  EXPECT_FALSE(fs::exists(path("seq_0000.png")));
}

// The report is text: written to stdout after the summary, through a link to stdout, and to /dev/null.
TEST_F(CliOutputPlaces, ReportIsStreamedToStdoutAndCharacterDevices) {
  CliResult r = run_dattn(generate(path("v.safetensors"), "--report /proc/self/fd/1"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::size_t brace = r.out.find("\n{\n");
  ASSERT_NE(brace, std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out.substr(brace + 1)).at("num_inference_steps").get<int>(), 2);
  fs::create_symlink("/proc/self/fd/1", path("stdout.json"));
  r = run_dattn(generate(path("v.safetensors"), "--report " + shell_quote(path("stdout.json"))));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"num_inference_steps\": 2"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_symlink(path("stdout.json")));
  fs::create_symlink("/dev/null", path("null.json"));
  r = run_dattn(generate(path("v.safetensors"), "--report " + shell_quote(path("null.json"))));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(path("null.json")));
  EXPECT_EQ(fs::read_symlink(path("null.json")), "/dev/null");
}

TEST_F(CliOutputPlaces, ReportToDevStdoutIsStreamed) {
  const CliResult r = run_dattn(generate(path("v.safetensors"), "--report /dev/stdout"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"num_inference_steps\": 2"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_symlink("/dev/stdout") || fs::is_character_file("/dev/stdout"));
}

// A FIFO's reader gets the report; the FIFO stays. The reader is bounded by timeout: a binary that
// renames over the FIFO leaves it waiting.
TEST_F(CliOutputPlaces, ReportIsStreamedToAFifo) {
  fifo("r.fifo");
  const std::string got = path("got.json");
  const CliResult r = run_dattn(generate(path("v.safetensors"), "--report " + shell_quote(path("r.fifo"))), "",
                                "timeout 60 cat " + shell_quote(path("r.fifo")) + " > " + shell_quote(got) + " &");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_fifo(path("r.fifo")));
  std::string text;
  for (int i = 0; i < 100 && (text = read(got)).find("\n}\n") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_NE(text.find("\n}\n"), std::string::npos) << text;
  EXPECT_EQ(nlohmann::json::parse(text).at("num_inference_steps").get<int>(), 2);
}

// A symlink to a regular file: the file it names gets the new bytes, the link stays a link.
TEST_F(CliOutputPlaces, SymlinkedOutputWritesThroughToItsTarget) {
  fs::create_directories(path("elsewhere"));
  std::ofstream(path("elsewhere/v.safetensors")) << "old bytes";
  std::ofstream(path("elsewhere/r.json")) << "old";
  fs::create_symlink("elsewhere/v.safetensors", path("v.safetensors"));
  fs::create_symlink(path("elsewhere/r.json"), path("r.json"));
  const CliResult r = run_dattn(generate(path("v.safetensors"), "--report " + shell_quote(path("r.json"))));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(path("v.safetensors")));
  EXPECT_TRUE(fs::is_symlink(path("r.json")));
  EXPECT_GT(fs::file_size(path("elsewhere/v.safetensors")), 1000u);
  EXPECT_EQ(nlohmann::json::parse(read(path("elsewhere/r.json"))).at("num_inference_steps").get<int>(), 2);
  // Nothing was left in either folder but the files themselves.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(path("elsewhere"))) ++entries;
  EXPECT_EQ(entries, 2u);
}

// The initial latents, however the path is spelled (a hard link, a symlink, "x/../"), are never the
// output; nor is a file the model folder is read from.
TEST_F(CliOutputPlaces, InputsAreNeverOutputs) {
  const std::string latents = path("latents.safetensors");
  fs::copy_file(golden_dir() + "/wan_tiny/cases/pipeline_t2v_fp32.safetensors", latents);
  const std::string before = read(latents);
  fs::create_hard_link(latents, path("hard.safetensors"));
  fs::create_symlink(latents, path("soft.safetensors"));
  fs::create_directories(path("sub"));
  for (const std::string& out : {latents, path("hard.safetensors"), path("soft.safetensors"),
                                 path("sub/../latents.safetensors")})
    expect_refused(run_dattn(generate(out, "--initial-latents " + shell_quote(latents))),
                   "--output '" + out + "' is the file of --initial-latents");
  expect_refused(run_dattn(generate(path("v.safetensors"), "--initial-latents " + shell_quote(latents) +
                                                               " --report " + shell_quote(path("soft.safetensors")))),
                 "is the file of --initial-latents");
  EXPECT_EQ(read(latents), before);
  EXPECT_TRUE(fs::is_symlink(path("soft.safetensors")));

  fs::copy(pipeline(), path("model"), fs::copy_options::recursive);
  const std::string weights = path("model/transformer/diffusion_pytorch_model.safetensors");
  const std::string weight_bytes = read(weights);
  expect_refused(run_dattn(generate(weights, "", path("model"))), "is a file of the model folder");
  expect_refused(run_dattn(generate(path("v.safetensors"), "--report " + shell_quote(path("model/model_index.json")),
                                    path("model"))),
                 "is a file of the model folder");
  EXPECT_EQ(read(weights), weight_bytes);
}

TEST_F(CliOutputPlaces, TransformerOutputIsNotItsInputs) {
  const std::string inputs = path("case.safetensors");
  fs::copy_file(golden_dir() + "/wan_tiny/cases/transformer_t2v_scalar_t.safetensors", inputs);
  const std::string before = read(inputs);
  fs::create_symlink(inputs, path("out.safetensors"));
  for (const std::string& out : {inputs, path("out.safetensors")})
    expect_refused(run_dattn("transformer --device cpu --model " + shell_quote(pipeline() + "/transformer") +
                             " --inputs " + shell_quote(inputs) + " --output " + shell_quote(out)),
                   "--output '" + out + "' is the file of --inputs");
  EXPECT_EQ(read(inputs), before);
}

}  // namespace
}  // namespace dattn::testing
