// Integer flags are read as plain decimal in every command (issue 49): CLI11 read "010" as 8 (octal),
// "0x10" as 16, failed "064" naming 52, took " 5" and "+5" but not "5 ", and `attention --key-padding -1`
// ran as if the flag were unset. Each flag's refusal names it, the value as typed and what is expected.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "cli/serve_skip.h"
#include "support/golden_dir.h"

namespace dattn::testing {
namespace {

namespace fs = std::filesystem;

std::string pipeline() { return golden_dir() + "/wan_tiny/pipeline"; }

std::string temp(const std::string& name) {
  return (fs::path(::testing::TempDir()) / ("dattn_cli_int_" + std::to_string(getpid()) + "_" + name)).string();
}

std::string generate(const std::string& extra, const std::string& height = "--height 64") {
  return "generate --device cpu --model " + shell_quote(pipeline()) + " --prompt 'a dog' " + height +
         " --width 96 --num-frames 5 --num-inference-steps 2 --output " + shell_quote(temp("v.safetensors")) + " " +
         extra;
}

void expect_refused(const std::string& args, const std::string& flag, const std::string& value) {
  const CliResult r = run_dattn(args + " " + flag + " " + shell_quote(value), "-u OMPI_COMM_WORLD_SIZE -u PMI_SIZE");
  EXPECT_EQ(r.status, 2) << args << " " << flag << " '" << value << "': " << r.out << r.err;
  const std::string message = flag + " '" + value + "': expected a whole number from 0 to ";
  EXPECT_NE(r.err.find(message), std::string::npos) << "expected '" << message << "' in: " << r.err;
  EXPECT_NE(r.err.find("(decimal digits only)"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// Every integer flag of every command, each with text CLI11 took as another number or in silence.
const std::vector<std::string> kNotDecimal = {"0x10", "+5", " 5", "5 ", "1e3", "-1", "0b11"};

TEST(CliIntegerFlags, GenerateRefusesAnythingButDecimalDigits) {
  for (const char* flag : {"--height", "--width", "--num-frames", "--num-inference-steps", "--fps",
                           "--validate-warmup-steps", "--tensor-parallel-size", "--ulysses-degree",
                           "--cfg-parallel-size"})
    for (const std::string& value : kNotDecimal) expect_refused(generate(""), flag, value);
  EXPECT_FALSE(fs::exists(temp("v.safetensors")));
}

TEST(CliIntegerFlags, AttentionRefusesAnythingButDecimalDigits) {
  for (const char* flag : {"--kv-heads", "--key-padding", "--repeat", "--seed"})
    for (const std::string& value : kNotDecimal) expect_refused("attention --shape 1,8,8,2,16", flag, value);
  // --shape's numbers too (a '-' is read, so that the check names the negative dimension).
  for (const char* shape : {"1,+8,8,2,16", "1, 8,8,2,16", "1,8 ,8,2,16", "1,0x8,8,2,16"}) {
    const CliResult r = run_dattn(std::string("attention --shape ") + shell_quote(shape));
    EXPECT_EQ(r.status, 2) << shape << ": " << r.err;
    EXPECT_NE(r.err.find("is not an integer in decimal digits; expected B,Sq,Sk,H,D"), std::string::npos) << r.err;
  }
}

TEST(CliIntegerFlags, ServeRefusesAnythingButDecimalDigits) {
  DATTN_SKIP_WITHOUT_SERVE();
  const std::string serve = "serve --device cpu " + shell_quote(pipeline()) + " --output-dir " +
                            shell_quote(temp("serve")) + " --port";
  for (const char* flag : {"--max-queue", "--max-width", "--max-height", "--max-frames", "--max-steps",
                           "--max-images", "--max-prompt-chars", "--max-body-bytes", "--default-width",
                           "--default-height", "--default-num-frames", "--default-steps", "--default-fps"})
    for (const std::string& value : {std::string("0x10"), std::string("+5"), std::string("-1")})
      expect_refused(serve + " 0", flag, value);
  expect_refused("serve --device cpu " + shell_quote(pipeline()), "--port", "0x1F90");
}

// -1 was the flag's "unset"; given, it ran without a mask and exited 0.
TEST(CliIntegerFlags, AttentionKeyPaddingRefusesNegatives) {
  expect_refused("attention --shape 1,8,8,2,16", "--key-padding", "-1");
  const CliResult r = run_dattn("attention --shape 1,8,8,2,16 --repeat 1 --key-padding 8 --json --backend TORCH_SDPA");
  EXPECT_EQ(r.status, 0) << r.err;
}

// A leading zero is decimal: 010 is 10 (not 8) and 064 is 64 (it failed naming 52).
TEST(CliIntegerFlags, LeadingZerosAreDecimal) {
  const std::string report = temp("r.json");
  const CliResult r = run_dattn(generate("--fps 010 --report " + shell_quote(report), "--height 064"));
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(report);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("height").get<int>(), 64);
  EXPECT_EQ(j.at("fps").get<int>(), 10);
  fs::remove(report);
  fs::remove(temp("v.safetensors"));
}

}  // namespace
}  // namespace dattn::testing
