// AttentionConfig from and to JSON (spec section 3): normalisation rules and every error message.
#include <string>

#include <gtest/gtest.h>

#include "support/config_error.h"
#include "dattn/attention/config.h"
#include "dattn/core/error.h"

namespace dattn {
namespace {

using nlohmann::json;


std::string from_json_error(const std::string& text) {
  return config_error([&] { AttentionConfig::from_json(json::parse(text)); });
}

const std::string kUnknownX =
    "Unknown diffusion attention backend: 'X'. Valid options are: FLASH_ATTN, TORCH_SDPA, SAGE_ATTN, SPARSE_BLOCK";

TEST(ConfigJson, DocumentJsonExample) {
  const auto c = AttentionConfig::from_json_string(
      R"({"default":{"backend":"FLASH_ATTN"},"per_role":{"cross":{"backend":"TORCH_SDPA"}}})");
  ASSERT_TRUE(c.default_spec);
  EXPECT_EQ(c.default_spec->backend, "FLASH_ATTN");
  EXPECT_EQ(c.default_spec->extra, json::object());
  ASSERT_EQ(c.per_role.size(), 1u);
  EXPECT_EQ(c.per_role.at("cross").backend, "TORCH_SDPA");
}

TEST(ConfigJson, DocumentProgrammaticExampleEqualsPlainDict) {
  AttentionConfig built;
  built.default_spec = AttentionSpec{"FLASH_ATTN"};
  built.per_role["cross"] = AttentionSpec{"TORCH_SDPA"};
  const auto from_dict =
      AttentionConfig::from_json(json{{"default", {{"backend", "FLASH_ATTN"}}}, {"per_role", {{"cross", "TORCH_SDPA"}}}});
  EXPECT_EQ(built.normalized(), from_dict);
}

TEST(ConfigJson, SpecMayBeANameOrAnObject) {
  const auto c = AttentionConfig::from_json_string(
      R"({"default":"SAGE_ATTN","per_role":{"self":{"backend":"SPARSE_BLOCK","extra":{"block_size":128}}}})");
  EXPECT_EQ(c.default_spec, (AttentionSpec{"SAGE_ATTN", json::object()}));
  EXPECT_EQ(c.per_role.at("self"), (AttentionSpec{"SPARSE_BLOCK", json{{"block_size", 128}}}));
}

TEST(ConfigJson, NamesAreCanonicalAnyCaseAndSdpaAlias) {
  const auto c = AttentionConfig::from_json_string(
      R"({"default":"flash_attn","per_role":{"a":"sdpa","b":"SDPA","c":{"backend":"Sage_Attn"},"d":"torch_sdpa"}})");
  EXPECT_EQ(c.default_spec->backend, "FLASH_ATTN");
  EXPECT_EQ(c.per_role.at("a").backend, "TORCH_SDPA");
  EXPECT_EQ(c.per_role.at("b").backend, "TORCH_SDPA");
  EXPECT_EQ(c.per_role.at("c").backend, "SAGE_ATTN");
  EXPECT_EQ(c.per_role.at("d").backend, "TORCH_SDPA");
}

TEST(ConfigJson, AutoDefaultIsUnsetAndAutoRoleIsDropped) {
  for (const char* text : {R"({"default":"auto"})", R"({"default":"AUTO"})", R"({"default":{"backend":"Auto"}})"})
    EXPECT_FALSE(AttentionConfig::from_json_string(text).default_spec) << text;
  const auto c = AttentionConfig::from_json_string(
      R"({"per_role":{"self":"auto","cross":{"backend":"AUTO"},"x":{"backend":"auto","extra":{"any":1}},"y":"FLASH_ATTN"}})");
  ASSERT_EQ(c.per_role.size(), 1u);  // an auto entry goes with its extra, which no backend can check
  EXPECT_TRUE(c.per_role.count("y"));
}

TEST(ConfigJson, NullMeansUnset) {
  EXPECT_EQ(AttentionConfig::from_json(json(nullptr)), AttentionConfig{});
  EXPECT_EQ(AttentionConfig::from_json_string(R"({"default":null,"per_role":null})"), AttentionConfig{});
  EXPECT_TRUE(AttentionConfig::from_json_string(R"({"per_role":{"self":null}})").per_role.empty());
  EXPECT_EQ(AttentionConfig::from_json_string(R"({"default":{"backend":"SPARSE_BLOCK","extra":null}})").default_spec,
            (AttentionSpec{"SPARSE_BLOCK", json::object()}));
}

TEST(ConfigJson, NestedRolesAreFlattenedWithDots) {
  const auto c = AttentionConfig::from_json_string(
      R"({"per_role":{"ltx2":{"audio_to_video":{"backend":"SAGE_ATTN"},"video_to_audio":"sdpa"},
          "a":{"b":{"c":{"backend":"SPARSE_BLOCK","extra":{"density":0.5}}}}}})");
  ASSERT_EQ(c.per_role.size(), 3u);
  EXPECT_EQ(c.per_role.at("ltx2.audio_to_video").backend, "SAGE_ATTN");
  EXPECT_EQ(c.per_role.at("ltx2.video_to_audio").backend, "TORCH_SDPA");
  EXPECT_EQ(c.per_role.at("a.b.c"), (AttentionSpec{"SPARSE_BLOCK", json{{"density", 0.5}}}));
}

TEST(ConfigJson, DottedRoleKeyIsTheRoleItself) {
  const auto c = AttentionConfig::from_json_string(R"({"per_role":{"ltx2.audio_to_video":"SAGE_ATTN"}})");
  EXPECT_EQ(c.per_role.at("ltx2.audio_to_video").backend, "SAGE_ATTN");
}

TEST(ConfigJson, MixingSpecAndNestedRolesIsAnError) {
  EXPECT_EQ(from_json_error(R"({"per_role":{"ltx2":{"backend":"SAGE_ATTN","audio_to_video":"FLASH_ATTN"}}})"),
            "Invalid per_role entry for role 'ltx2': cannot mix backend/extra with nested role keys.");
  EXPECT_EQ(from_json_error(R"({"per_role":{"ltx2":{"a2v":{"extra":{},"x":"FLASH_ATTN"}}}})"),
            "Invalid per_role entry for role 'ltx2.a2v': cannot mix backend/extra with nested role keys.");
  // A misspelt field beside "backend" reads as a nested role: it is refused, never ignored.
  EXPECT_EQ(from_json_error(R"({"per_role":{"self":{"backend":"SPARSE_BLOCK","extras":{}}}})"),
            "Invalid per_role entry for role 'self': cannot mix backend/extra with nested role keys.");
}

TEST(ConfigJson, EmptyEntryIsAnError) {
  EXPECT_EQ(from_json_error(R"({"per_role":{"self":{}}})"), "Empty per_role entry for role 'self'");
  EXPECT_EQ(from_json_error(R"({"per_role":{"ltx2":{"audio_to_video":{}}}})"),
            "Empty per_role entry for role 'ltx2.audio_to_video'");
}

TEST(ConfigJson, UnknownTopLevelKeyIsAnError) {
  EXPECT_EQ(from_json_error(R"({"defaults":"FLASH_ATTN"})"),
            "Unknown key 'defaults' in diffusion attention config: expected 'default' or 'per_role'.");
  EXPECT_EQ(from_json_error(R"({"backend":"FLASH_ATTN"})"),
            "Unknown key 'backend' in diffusion attention config: expected 'default' or 'per_role'.");
}

TEST(ConfigJson, UnknownKeyInDefaultSpecIsAnError) {
  EXPECT_EQ(from_json_error(R"({"default":{"backend":"FLASH_ATTN","extras":{}}})"),
            "Unknown key 'extras' in default spec: expected 'backend' or 'extra'.");
}

TEST(ConfigJson, FieldTypesAreChecked) {
  EXPECT_EQ(from_json_error(R"({"default":{"backend":1}})"),
            "Invalid default spec: 'backend' must be a string, got number.");
  EXPECT_EQ(from_json_error(R"({"per_role":{"self":{"backend":["FLASH_ATTN"]}}})"),
            "Invalid per_role entry for role 'self': 'backend' must be a string, got array.");
  EXPECT_EQ(from_json_error(R"({"default":{"backend":"SPARSE_BLOCK","extra":"block_size=64"}})"),
            "Invalid default spec: 'extra' must be an object, got string.");
  EXPECT_EQ(from_json_error(R"({"per_role":{"cross":{"backend":"SPARSE_BLOCK","extra":[64]}}})"),
            "Invalid per_role entry for role 'cross': 'extra' must be an object, got array.");
}

TEST(ConfigJson, WrongShapesAreErrors) {
  EXPECT_EQ(from_json_error(R"(["FLASH_ATTN"])"),
            "Invalid diffusion attention config: expected a JSON object {\"default\": SPEC, \"per_role\": {ROLE: "
            "SPEC}}, got array.");
  EXPECT_EQ(from_json_error(R"({"per_role":"FLASH_ATTN"})"),
            "Invalid diffusion attention config: 'per_role' must be an object mapping role to spec, got string.");
  EXPECT_EQ(from_json_error(R"({"default":128})"),
            "Invalid default spec: expected a backend name or an object {\"backend\": NAME, \"extra\": {...}}, got "
            "number.");
  EXPECT_EQ(from_json_error(R"({"per_role":{"self":true}})"),
            "Invalid per_role entry for role 'self': expected a backend name, an object {\"backend\": NAME, "
            "\"extra\": {...}} or nested roles, got boolean.");
}

TEST(ConfigJson, UnknownBackendIsAnErrorAtParseTime) {
  EXPECT_EQ(from_json_error(R"({"default":"X"})"), kUnknownX);
  EXPECT_EQ(from_json_error(R"({"per_role":{"cross":{"backend":"X"}}})"), kUnknownX);
  EXPECT_EQ(from_json_error(R"({"per_role":{"a":{"b":"X"}}})"), kUnknownX);
}

TEST(ConfigJson, SpecObjectNeedsABackend) {
  EXPECT_EQ(from_json_error(R"({"per_role":{"self":{"extra":{"block_size":64}}}})"),
            "Invalid per_role entry for role 'self': 'extra' given without 'backend'.");
  EXPECT_EQ(from_json_error(R"({"default":{"extra":{}}})"), "Invalid default spec: 'extra' given without 'backend'.");
  EXPECT_EQ(from_json_error(R"({"default":{}})"), "Invalid default spec: 'backend' is missing.");
}

TEST(ConfigJson, DuplicateRoleAfterFlatteningIsAnError) {
  EXPECT_EQ(from_json_error(R"({"per_role":{"a.b":"FLASH_ATTN","a":{"b":"TORCH_SDPA"}}})"),
            "Duplicate per_role entry for role 'a.b': it is given more than once (nested and dotted forms name "
            "the same role).");
}

TEST(ConfigJson, RoleNamesMustBeNonEmpty) {
  const std::string suffix = "' in per_role: role names and their dotted parts must be non-empty.";
  EXPECT_EQ(from_json_error(R"({"per_role":{"":"FLASH_ATTN"}})"), "Invalid role name '" + suffix);
  EXPECT_EQ(from_json_error(R"({"per_role":{"a":{"":"FLASH_ATTN"}}})"), "Invalid role name 'a." + suffix);
  EXPECT_EQ(from_json_error(R"({"per_role":{"a..b":"FLASH_ATTN"}})"), "Invalid role name 'a..b" + suffix);
}

TEST(ConfigJson, ExtraIsValidatedAgainstTheBackend) {
  // validate_extra's own wording belongs to backend.cc; here: it names the backend, the key and where.
  const std::string unknown = from_json_error(R"({"per_role":{"self":{"backend":"FLASH_ATTN","extra":{"x":1}}}})");
  EXPECT_NE(unknown.find("FLASH_ATTN"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("'x'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("role 'self'"), std::string::npos) << unknown;
  const std::string range = from_json_error(R"({"default":{"backend":"SPARSE_BLOCK","extra":{"block_size":96}}})");
  EXPECT_NE(range.find("block_size"), std::string::npos) << range;
  EXPECT_NE(range.find("default"), std::string::npos) << range;
  EXPECT_NE(from_json_error(R"({"default":{"backend":"SPARSE_BLOCK","extra":{"density":0}}})").find("density"),
            std::string::npos);
  EXPECT_NE(from_json_error(R"({"default":{"backend":"SPARSE_BLOCK","extra":{"keep_diagonal":1}}})")
                .find("keep_diagonal"),
            std::string::npos);
  const auto ok = AttentionConfig::from_json_string(
      R"({"default":{"backend":"SPARSE_BLOCK","extra":{"block_size":64,"density":1,"cdf_threshold":0.9,"keep_diagonal":false}}})");
  EXPECT_EQ(ok.default_spec->extra.size(), 4u);  // stored as given: defaults are filled in by the layer
}

TEST(ConfigJson, MalformedTextIsAOneLineErrorWithPosition) {
  const std::string msg = config_error([] { AttentionConfig::from_json_string("{\n  \"default\": FLASH_ATTN\n}"); });
  EXPECT_EQ(msg.rfind("Invalid JSON in diffusion attention config: parse error at line 2, column ", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(msg.find("[json.exception"), std::string::npos) << msg;
}

// Found by the fuzzer (tests/fuzz/corpus/fuzz_attention_config/crash_number_out_of_range): a number past
// double's range made nlohmann throw out_of_range, which escaped as an internal error.
TEST(ConfigJson, NumberOutOfRangeIsAConfigError) {
  const std::string msg =
      config_error([] { AttentionConfig::from_json_string(R"({"default":{"backend":"SPARSE_BLOCK","extra":{"density":6e666}}})"); });
  EXPECT_EQ(msg.rfind("Invalid JSON in diffusion attention config: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("6e666"), std::string::npos) << msg;
}

TEST(ConfigJson, NormalizedCanonicalisesAndValidates) {
  AttentionConfig c;
  c.default_spec = AttentionSpec{"auto"};
  c.per_role["self"] = AttentionSpec{"sdpa"};
  c.per_role["cross"] = AttentionSpec{"AUTO"};
  const auto n = c.normalized();
  EXPECT_FALSE(n.default_spec);
  ASSERT_EQ(n.per_role.size(), 1u);
  EXPECT_EQ(n.per_role.at("self").backend, "TORCH_SDPA");

  AttentionConfig unknown;
  unknown.per_role["self"] = AttentionSpec{"X"};
  EXPECT_EQ(config_error([&] { unknown.normalized(); }), kUnknownX);
  AttentionConfig bad_extra;
  bad_extra.default_spec = AttentionSpec{"SPARSE_BLOCK", json::array()};
  EXPECT_EQ(config_error([&] { bad_extra.normalized(); }), "Invalid default spec: 'extra' must be an object, got array.");
  AttentionConfig empty_role;
  empty_role.per_role[""] = AttentionSpec{"FLASH_ATTN"};
  EXPECT_EQ(config_error([&] { empty_role.normalized(); }),
            "Invalid role name '' in per_role: role names and their dotted parts must be non-empty.");
}

TEST(ConfigJson, ToJsonIsTheFullFormAndRoundTrips) {
  const auto c = AttentionConfig::from_json_string(
      R"({"default":"sdpa","per_role":{"ltx2":{"audio_to_video":{"backend":"SPARSE_BLOCK","extra":{"block_size":64}}}}})");
  const json expected = json::parse(
      R"({"default":{"backend":"TORCH_SDPA","extra":{}},
          "per_role":{"ltx2.audio_to_video":{"backend":"SPARSE_BLOCK","extra":{"block_size":64}}}})");
  EXPECT_EQ(c.to_json(), expected);
  EXPECT_EQ(AttentionConfig::from_json(c.to_json()), c);
  EXPECT_EQ(AttentionConfig{}.to_json(), json::parse(R"({"default":null,"per_role":{}})"));
  EXPECT_EQ(AttentionConfig::from_json(AttentionConfig{}.to_json()), AttentionConfig{});
}

}  // namespace
}  // namespace dattn

namespace dattn {
namespace {

// per_role objects nested `depth` deep around one backend name: {"per_role": {"a": {"a": ... "FLASH_ATTN"}}}.
std::string nested_roles_text(int depth) {
  std::string s = "{\"per_role\":";
  for (int i = 0; i < depth; ++i) s += "{\"a\":";
  s += "\"FLASH_ATTN\"";
  s += std::string(static_cast<std::size_t>(depth), '}') + "}";
  return s;
}

// A key given twice kept the last value in silence; keys of different objects may repeat.
TEST(ConfigJson, AKeyGivenTwiceInOneObjectIsAnError) {
  EXPECT_EQ(config_error([] { AttentionConfig::from_json_string(R"({"default":"SDPA","default":"FLASH_ATTN"})"); }),
            "Invalid JSON in diffusion attention config: key 'default' is given twice in one object.");
  EXPECT_NE(config_error([] {
              AttentionConfig::from_json_string(
                  R"({"per_role":{"self":{"backend":"SPARSE_BLOCK","extra":{"density":0.5,"density":0.25}}}})");
            }).find("key 'density' is given twice"),
            std::string::npos);
  const AttentionConfig ok = AttentionConfig::from_json_string(
      R"({"per_role":{"self":{"backend":"SDPA"},"cross":{"backend":"SDPA"}},"default":{"backend":"SDPA"}})");
  EXPECT_EQ(ok.per_role.size(), 2u);
}

// 20,000 levels overflowed the stack of the recursive role reader (SIGSEGV); now a one-line error at
// the depth limit, whether the JSON comes as text or is built in C++.
TEST(ConfigJson, NestingDepthIsLimited) {
  const std::string text_error =
      config_error([] { AttentionConfig::from_json_string(nested_roles_text(20000)); });
  EXPECT_NE(text_error.find("Invalid JSON in diffusion attention config: nested deeper than 32 levels"),
            std::string::npos)
      << text_error;
  json built = "FLASH_ATTN";
  for (int i = 0; i < 20000; ++i) {
    json next = json::object();
    next["a"] = std::move(built);
    built = std::move(next);
  }
  const std::string built_error = config_error([&] { AttentionConfig::from_json(json{{"per_role", std::move(built)}}); });
  EXPECT_NE(built_error.find("roles nest deeper than 32 levels"), std::string::npos) << built_error;
  // Ten dotted parts are fine.
  const auto ok = AttentionConfig::from_json_string(nested_roles_text(10));
  EXPECT_EQ(ok.per_role.begin()->first, "a.a.a.a.a.a.a.a.a.a");
}

}  // namespace
}  // namespace dattn
