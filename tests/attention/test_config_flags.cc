// Attention command-line flags and DIFFUSION_ATTENTION_BACKEND (spec section 3), with the user
// document's command lines.
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/config_error.h"
#include "dattn/attention/config.h"
#include "dattn/core/error.h"

namespace dattn {
namespace {

using nlohmann::json;
using Args = std::vector<std::string>;


// A command line's config, as a command would read it; every attention flag must be consumed.
AttentionConfig config_of(Args args) {
  const AttentionFlags flags = extract_attention_flags(args);
  EXPECT_TRUE(args.empty()) << "left over: " << args.front();
  return config_from_flags(flags);
}

std::string flags_error(Args args) {
  return config_error([&] { config_from_flags(extract_attention_flags(args)); });
}

const std::string kBadPath =
    ": expected --diffusion-attention-config.default.backend, --diffusion-attention-config.default.extra.KEY, "
    "--diffusion-attention-config.per_role.ROLE.backend or --diffusion-attention-config.per_role.ROLE.extra.KEY.";
const std::string kExclusive =
    "--diffusion-attention-backend is mutually exclusive with --diffusion-attention-config.default.backend.";

TEST(ConfigFlags, ExtractRemovesOnlyAttentionFlagsInBothForms) {
  Args args = {"--model", "m", "--diffusion-attention-backend", "SAGE_ATTN", "-dac={}", "--steps=3",
               "--diffusion-attention-config.per_role.self.backend=FLASH_ATTN",
               "--diffusion-attention-config.per_role.self.extra.x", "a=b", "--diffusion-attention-backends", "x"};
  const AttentionFlags f = extract_attention_flags(args);
  EXPECT_EQ(args, (Args{"--model", "m", "--steps=3", "--diffusion-attention-backends", "x"}));
  EXPECT_EQ(f.backend_shorthand, "SAGE_ATTN");
  EXPECT_EQ(f.config_json, "{}");
  const std::vector<std::pair<std::string, std::string>> dotted = {{"per_role.self.backend", "FLASH_ATTN"},
                                                                   {"per_role.self.extra.x", "a=b"}};
  EXPECT_EQ(f.dotted, dotted);
  Args none = {"generate", "--prompt", "p"};
  EXPECT_TRUE(extract_attention_flags(none).empty());
  Args long_form = {"--diffusion-attention-config", "{\"default\":\"FLASH_ATTN\"}", "--diffusion-attention-backend=X"};
  const AttentionFlags g = extract_attention_flags(long_form);
  EXPECT_EQ(g.config_json, "{\"default\":\"FLASH_ATTN\"}");
  EXPECT_EQ(g.backend_shorthand, "X");
}

TEST(ConfigFlags, MissingValueIsAnErrorNamingTheFlag) {
  auto extract_error = [](Args args) { return config_error([&] { extract_attention_flags(args); }); };
  EXPECT_EQ(extract_error({"--diffusion-attention-backend"}),
            "Missing value for --diffusion-attention-backend: expected a backend name.");
  EXPECT_EQ(extract_error({"--diffusion-attention-backend", "--steps", "3"}),
            "Missing value for --diffusion-attention-backend: expected a backend name.");
  EXPECT_EQ(extract_error({"-dac"}), "Missing value for -dac: expected a JSON object.");
  EXPECT_EQ(extract_error({"--diffusion-attention-config"}),
            "Missing value for --diffusion-attention-config: expected a JSON object.");
  EXPECT_EQ(extract_error({"--diffusion-attention-config.per_role.self.backend"}),
            "Missing value for --diffusion-attention-config.per_role.self.backend: expected a value.");
  // An empty value after '=' is a value (an empty string), not a missing one.
  Args empty = {"--diffusion-attention-config.default.extra.k="};
  EXPECT_EQ(extract_attention_flags(empty).dotted.front().second, "");
}

// Found by the fuzzer (tests/fuzz/corpus/fuzz_attention_config/crash_invalid_utf8_role): a role name
// with bytes that are not UTF-8 was accepted, and writing the config as JSON then threw an internal error.
TEST(ConfigFlags, TextThatIsNotUtf8IsAnError) {
  const std::string utf8_error =
      "Invalid flag --diffusion-attention-config.PATH VALUE: the path or the value is not valid UTF-8 text.";
  for (const std::string& bad : {std::string("s\xe5\xff\xff\x7f"), std::string("\xc0\xaf"),   // overlong
                                 std::string("\xed\xa0\x80"), std::string("caf\xc3")})      // surrogate, cut short
  {
    EXPECT_EQ(flags_error({"--diffusion-attention-config.per_role." + bad + ".backend", "FLASH_ATTN"}), utf8_error);
    EXPECT_EQ(flags_error({"--diffusion-attention-config.default.extra.k", bad}), utf8_error);
  }
  // Well-formed non-ASCII text is fine.
  EXPECT_EQ(config_of({"--diffusion-attention-config.per_role.caf\xc3\xa9.backend", "FLASH_ATTN"}).to_json().dump(),
            config_of({"--diffusion-attention-config.per_role.caf\xc3\xa9.backend=FLASH_ATTN"}).to_json().dump());
}

TEST(ConfigFlags, RepeatedFlagsAreErrors) {
  EXPECT_EQ(flags_error({"--diffusion-attention-backend", "A", "--diffusion-attention-backend", "B"}),
            "--diffusion-attention-backend given more than once.");
  EXPECT_EQ(flags_error({"-dac", "{}", "--diffusion-attention-config", "{}"}),
            "--diffusion-attention-config (-dac) given more than once.");
  EXPECT_EQ(flags_error({"--diffusion-attention-config.per_role.self.backend", "FLASH_ATTN",
                         "--diffusion-attention-config.per_role.self.backend=TORCH_SDPA"}),
            "--diffusion-attention-config.per_role.self.backend given more than once.");
}

TEST(ConfigFlags, DocumentDottedAndJsonExamplesAgree) {
  const auto dotted = config_of({"--diffusion-attention-config.default.backend", "FLASH_ATTN",
                                 "--diffusion-attention-config.per_role.cross.backend", "TORCH_SDPA"});
  const auto blob = config_of(
      {"--diffusion-attention-config",
       R"({"default":{"backend":"FLASH_ATTN"},"per_role":{"cross":{"backend":"TORCH_SDPA"}}})"});
  EXPECT_EQ(dotted.default_spec, (AttentionSpec{"FLASH_ATTN"}));
  ASSERT_EQ(dotted.per_role.size(), 1u);
  EXPECT_EQ(dotted.per_role.at("cross"), (AttentionSpec{"TORCH_SDPA"}));
  EXPECT_EQ(dotted, blob);
}

TEST(ConfigFlags, DocumentSparseBlockExtraExample) {
  const auto c = config_of({"--diffusion-attention-config.per_role.self.backend", "SPARSE_BLOCK",
                            "--diffusion-attention-config.per_role.self.extra.block_size", "128"});
  EXPECT_EQ(c.per_role.at("self"), (AttentionSpec{"SPARSE_BLOCK", json{{"block_size", 128}}}));
  EXPECT_TRUE(c.per_role.at("self").extra["block_size"].is_number_integer());
}

TEST(ConfigFlags, DocumentMixedBackendsExample) {
  const auto c = config_of({"--diffusion-attention-config.per_role.self.backend", "FLASH_ATTN",
                            "--diffusion-attention-config.per_role.cross.backend", "TORCH_SDPA"});
  EXPECT_FALSE(c.default_spec);
  EXPECT_EQ(c.per_role.at("self").backend, "FLASH_ATTN");
  EXPECT_EQ(c.per_role.at("cross").backend, "TORCH_SDPA");
}

TEST(ConfigFlags, DocumentShorthandExample) {
  EXPECT_EQ(config_of({"--diffusion-attention-backend", "SAGE_ATTN"}).default_spec, (AttentionSpec{"SAGE_ATTN"}));
  EXPECT_EQ(config_of({"--diffusion-attention-backend=sdpa"}).default_spec, (AttentionSpec{"TORCH_SDPA"}));
  EXPECT_FALSE(config_of({"--diffusion-attention-backend", "auto"}).default_spec);
  EXPECT_EQ(flags_error({"--diffusion-attention-backend", "X"}),
            "Unknown diffusion attention backend: 'X'. Valid options are: FLASH_ATTN, TORCH_SDPA, SAGE_ATTN, "
            "SPARSE_BLOCK");
}

TEST(ConfigFlags, ValuesAreDecodedAsJsonWhenTheyParse) {
  const auto c = config_of({"--diffusion-attention-config.default.backend", "SPARSE_BLOCK",
                            "--diffusion-attention-config.default.extra.density", "0.5",
                            "--diffusion-attention-config.default.extra.keep_diagonal", "false",
                            "--diffusion-attention-config.default.extra.block_size=64"});
  EXPECT_EQ(c.default_spec->extra, (json{{"density", 0.5}, {"keep_diagonal", false}, {"block_size", 64}}));
  // "\"128\"" is the JSON string "128", not a number: SPARSE_BLOCK refuses it.
  EXPECT_NE(flags_error({"--diffusion-attention-config.default.backend", "SPARSE_BLOCK",
                         "--diffusion-attention-config.default.extra.block_size", "\"128\""})
                .find("block_size"),
            std::string::npos);
  // A backend given as a JSON string is unquoted; a non-name stays as typed.
  EXPECT_EQ(config_of({"--diffusion-attention-config.default.backend", "\"sage_attn\""}).default_spec->backend,
            "SAGE_ATTN");
  EXPECT_EQ(flags_error({"--diffusion-attention-config.default.backend", "128"}),
            "Unknown diffusion attention backend: '128'. Valid options are: FLASH_ATTN, TORCH_SDPA, SAGE_ATTN, "
            "SPARSE_BLOCK");
}

TEST(ConfigFlags, RolePathIsReadFromItsEnd) {
  const auto c = config_of({"--diffusion-attention-config.per_role.ltx2.audio_to_video.backend", "SPARSE_BLOCK",
                            "--diffusion-attention-config.per_role.ltx2.audio_to_video.extra.block_size", "64"});
  EXPECT_EQ(c.per_role.at("ltx2.audio_to_video"), (AttentionSpec{"SPARSE_BLOCK", json{{"block_size", 64}}}));
}

TEST(ConfigFlags, BadPathsListTheAcceptedForms) {
  for (const std::string path : {"default", "default.extra", "default.extra.a.b", "default.foo", "backend",
                                 "per_role", "per_role.self", "per_role.self.extra", "per_role.self.foo",
                                 "per_role..backend", "per_role.backend", "per_role.self.extra.", "defaults.backend"}) {
    EXPECT_EQ(flags_error({"--diffusion-attention-config." + path, "1"}),
              "Invalid flag --diffusion-attention-config." + path + kBadPath);
  }
}

TEST(ConfigFlags, BlobFirstDottedOnTopWhateverTheOrder) {
  const auto c = config_of({"--diffusion-attention-config.per_role.cross.backend", "SAGE_ATTN", "-dac",
                            R"({"default":"FLASH_ATTN","per_role":{"cross":"TORCH_SDPA","self":"TORCH_SDPA"}})"});
  EXPECT_EQ(c.default_spec->backend, "FLASH_ATTN");
  EXPECT_EQ(c.per_role.at("cross").backend, "SAGE_ATTN");
  EXPECT_EQ(c.per_role.at("self").backend, "TORCH_SDPA");
}

TEST(ConfigFlags, DottedFlagsMergeIntoBlobSpecsBeforeNormalisation) {
  // The blob gives the backend, a dotted flag the extra key.
  auto c = config_of({"-dac", R"({"per_role":{"self":{"backend":"SPARSE_BLOCK"}}})",
                      "--diffusion-attention-config.per_role.self.extra.block_size", "64"});
  EXPECT_EQ(c.per_role.at("self"), (AttentionSpec{"SPARSE_BLOCK", json{{"block_size", 64}}}));
  // A dotted backend replaces a blob role given as a plain name.
  c = config_of({"-dac", R"({"per_role":{"self":"FLASH_ATTN"}})", "--diffusion-attention-config.per_role.self.backend",
                 "SAGE_ATTN"});
  EXPECT_EQ(c.per_role.at("self"), (AttentionSpec{"SAGE_ATTN"}));
  // ... and keeps the blob's extra; the dotted extra key is added to it.
  c = config_of({"-dac", R"({"per_role":{"self":{"backend":"FLASH_ATTN","extra":{"density":0.5}}}})",
                 "--diffusion-attention-config.per_role.self.backend", "SPARSE_BLOCK",
                 "--diffusion-attention-config.per_role.self.extra.block_size", "64"});
  EXPECT_EQ(c.per_role.at("self"), (AttentionSpec{"SPARSE_BLOCK", json{{"density", 0.5}, {"block_size", 64}}}));
  // A blob role nested by objects and a dotted flag with the dotted role are the same role.
  c = config_of({"-dac", R"({"per_role":{"ltx2":{"audio_to_video":{"backend":"SPARSE_BLOCK"}}}})",
                 "--diffusion-attention-config.per_role.ltx2.audio_to_video.extra.density", "1"});
  EXPECT_EQ(c.per_role.at("ltx2.audio_to_video"), (AttentionSpec{"SPARSE_BLOCK", json{{"density", 1}}}));
}

TEST(ConfigFlags, DottedAutoDropsTheRole) {
  const auto c = config_of({"-dac", R"({"per_role":{"self":{"backend":"SPARSE_BLOCK","extra":{"block_size":64}}}})",
                            "--diffusion-attention-config.per_role.self.backend", "auto"});
  EXPECT_TRUE(c.per_role.empty());
  EXPECT_FALSE(config_of({"-dac", R"({"default":"FLASH_ATTN"})", "--diffusion-attention-config.default.backend",
                          "AUTO"})
                   .default_spec);
}

TEST(ConfigFlags, ExtraWithoutBackendIsAnError) {
  EXPECT_EQ(flags_error({"--diffusion-attention-config.per_role.self.extra.block_size", "64"}),
            "Invalid per_role entry for role 'self': 'extra' given without 'backend'.");
  EXPECT_EQ(flags_error({"--diffusion-attention-config.default.extra.block_size", "64"}),
            "Invalid default spec: 'extra' given without 'backend'.");
}

TEST(ConfigFlags, ShorthandIsExclusiveWithAnExplicitDefaultBackend) {
  EXPECT_EQ(flags_error({"--diffusion-attention-backend", "SAGE_ATTN", "--diffusion-attention-config.default.backend",
                         "FLASH_ATTN"}),
            kExclusive);
  EXPECT_EQ(flags_error({"--diffusion-attention-backend", "SAGE_ATTN", "-dac", R"({"default":"FLASH_ATTN"})"}),
            kExclusive);
  EXPECT_EQ(flags_error({"-dac", R"({"default":{"backend":"auto"}})", "--diffusion-attention-backend=SAGE_ATTN"}),
            kExclusive);  // textual: any default backend given elsewhere conflicts, even auto
}

TEST(ConfigFlags, ShorthandCombinesWithPerRoleAndDefaultExtra) {
  auto c = config_of({"--diffusion-attention-backend", "SAGE_ATTN", "--diffusion-attention-config.per_role.cross.backend",
                      "TORCH_SDPA", "-dac", R"({"per_role":{"self":"FLASH_ATTN"}})"});
  EXPECT_EQ(c.default_spec, (AttentionSpec{"SAGE_ATTN"}));
  EXPECT_EQ(c.per_role.size(), 2u);
  c = config_of({"--diffusion-attention-backend", "SPARSE_BLOCK", "--diffusion-attention-config.default.extra.block_size",
                 "64"});
  EXPECT_EQ(c.default_spec, (AttentionSpec{"SPARSE_BLOCK", json{{"block_size", 64}}}));
  c = config_of({"--diffusion-attention-backend", "SPARSE_BLOCK", "-dac", R"({"default":{"extra":{"density":0.5}}})"});
  EXPECT_EQ(c.default_spec, (AttentionSpec{"SPARSE_BLOCK", json{{"density", 0.5}}}));
}

TEST(ConfigFlags, MalformedBlobIsAOneLineErrorWithPosition) {
  const std::string msg = flags_error({"-dac", "{\"default\": 'FLASH_ATTN'}"});
  EXPECT_EQ(msg.rfind("Invalid JSON in --diffusion-attention-config: parse error at line 1, column 13: ", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  EXPECT_EQ(flags_error({"-dac", R"({"per_role":{"self":{}}})"}), "Empty per_role entry for role 'self'");
}

TEST(ConfigEnv, ValuesOfTheVariable) {
  EXPECT_FALSE(env_default_spec(nullptr));
  EXPECT_FALSE(env_default_spec(""));
  EXPECT_FALSE(env_default_spec("auto"));
  EXPECT_FALSE(env_default_spec("Auto"));
  EXPECT_EQ(env_default_spec("SAGE_ATTN"), (AttentionSpec{"SAGE_ATTN"}));  // the document's example
  EXPECT_EQ(env_default_spec("sdpa"), (AttentionSpec{"TORCH_SDPA"}));
  EXPECT_EQ(config_error([] { env_default_spec("sage"); }),
            "Unknown diffusion attention backend in environment variable DIFFUSION_ATTENTION_BACKEND: 'sage'. "
            "Valid options are: FLASH_ATTN, TORCH_SDPA, SAGE_ATTN, SPARSE_BLOCK, or auto");
}

// Sets DIFFUSION_ATTENTION_BACKEND for one test and restores it.
class ScopedEnv {
 public:
  explicit ScopedEnv(const char* value) {
    if (const char* old = std::getenv("DIFFUSION_ATTENTION_BACKEND")) old_ = old;
    value ? setenv("DIFFUSION_ATTENTION_BACKEND", value, 1) : unsetenv("DIFFUSION_ATTENTION_BACKEND");
  }
  ~ScopedEnv() {
    old_ ? setenv("DIFFUSION_ATTENTION_BACKEND", old_->c_str(), 1) : unsetenv("DIFFUSION_ATTENTION_BACKEND");
  }

 private:
  std::optional<std::string> old_;
};

TEST(ConfigEnv, SettingsFromCommandLineReadTheEnvironment) {
  {
    ScopedEnv env("SAGE_ATTN");
    const AttentionSettings s = settings_from_command_line(AttentionFlags{});
    EXPECT_FALSE(s.config.default_spec);
    EXPECT_EQ(s.env_default, (AttentionSpec{"SAGE_ATTN"}));
  }
  {
    ScopedEnv env(nullptr);
    EXPECT_FALSE(settings_from_command_line(AttentionFlags{}).env_default);
  }
  {
    // Validated even when an explicit default would win: a typo there is still reported.
    ScopedEnv env("FLASH");
    AttentionFlags flags;
    flags.backend_shorthand = "TORCH_SDPA";
    EXPECT_NE(config_error([&] { settings_from_command_line(flags); }).find("DIFFUSION_ATTENTION_BACKEND: 'FLASH'"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace dattn

namespace dattn {
namespace {

// A dotted flag's VALUE is decoded as JSON: 20,000 nested arrays are refused at the depth limit.
TEST(ConfigFlags, DeeplyNestedValueIsRefused) {
  const std::string deep = std::string(20000, '[') + std::string(20000, ']');
  const std::string e = flags_error({"--diffusion-attention-config.per_role.self.backend", "SPARSE_BLOCK",
                                     "--diffusion-attention-config.per_role.self.extra.density", deep});
  EXPECT_NE(e.find("nested deeper than 32 levels"), std::string::npos) << e;
}

}  // namespace
}  // namespace dattn
