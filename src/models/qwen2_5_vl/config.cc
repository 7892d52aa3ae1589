// Qwen25VLTextConfig: reading and validating text_encoder/config.json.
#include <string>

#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/qwen2_5_vl.h"
#include "models/config_fields.h"

namespace dattn {
namespace {

using json = nlohmann::json;
using Reader = models::ConfigFields;

// The rope settings: transformers 5 writes `rope_parameters` {rope_type, rope_theta, mrope_section};
// transformers 4 wrote `rope_theta` beside `rope_scaling` {type / rope_type, mrope_section}.
double read_rope(const json& j, const std::string& source, std::int64_t head_dim) {
  const char* key = j.contains("rope_parameters") ? "rope_parameters" : "rope_scaling";
  double theta = Reader(j, source).positive_number("rope_theta", 10000.0);
  if (!j.contains(key) || j.at(key).is_null()) return theta;
  const json& r = j.at(key);
  const std::string where = source + " '" + key + "'";
  if (!r.is_object()) throw UserError(where + " must be an object, got " + r.dump());
  for (const char* type_key : {"rope_type", "type"}) {
    if (!r.contains(type_key) || r.at(type_key).is_null()) continue;
    const json& t = r.at(type_key);
    // "mrope" is how transformers 4 named Qwen2.5-VL's multimodal rope; "default" is plain RoPE.
    if (!t.is_string() || (t != "default" && t != "mrope"))
      throw UserError(where + ": '" + type_key + "' is " + t.dump() +
                      ": only \"default\" and \"mrope\" rope types are implemented (no scaled RoPE)");
  }
  const Reader rr(r, where);
  theta = rr.positive_number("rope_theta", theta);
  if (r.contains("mrope_section") && !r.at("mrope_section").is_null()) {
    // The three position streams (time, height, width) take these many frequency pairs each; for text
    // all three streams are the token index, so the sections only have to cover head_dim / 2.
    const json& sec = r.at("mrope_section");
    std::int64_t sum = 0;
    if (!sec.is_array()) rr.fail("mrope_section", "a list of non-negative integers");
    for (const json& e : sec) {
      if (!e.is_number_integer() || e.get<long long>() < 0) rr.fail("mrope_section", "a list of non-negative integers");
      sum += e.get<std::int64_t>();
    }
    if (sum != head_dim / 2) rr.fail("mrope_section", "sections summing to head_dim / 2 = " + std::to_string(head_dim / 2));
  }
  return theta;
}

}  // namespace

Qwen25VLTextConfig Qwen25VLTextConfig::from_json(const json& j_in, const std::string& source) {
  if (!j_in.is_object()) throw UserError(source + ": expected a JSON object");
  const json* jp = &j_in;
  std::string src = source;
  // A full Qwen2_5_VLConfig nests the language model's settings in text_config.
  // (== compares any JSON type; value() threw on a non-string model_type; Reader types it below.)
  if (j_in.contains("model_type") && j_in.at("model_type") == "qwen2_5_vl" && j_in.contains("text_config")) {
    jp = &j_in.at("text_config");
    src = source + " text_config";
    if (!jp->is_object()) throw UserError(src + ": expected a JSON object");
  }
  const json& j = *jp;
  const Reader r(j, src);
  if (const auto type = r.text("model_type"); type && *type != "qwen2_5_vl_text" && *type != "qwen2_5_vl")
    throw UserError(src + ": 'model_type' is \"" + *type + "\": expected \"qwen2_5_vl_text\" (Qwen2.5-VL's text model)");
  if (const auto act = r.text("hidden_act"); act && *act != "silu")
    throw UserError(src + ": 'hidden_act' is \"" + *act + "\": only \"silu\" (SwiGLU) is implemented");
  if (r.boolean("use_sliding_window", false))
    throw UserError(src + ": 'use_sliding_window' is true: sliding-window attention is not implemented");
  if (j.contains("layer_types") && j.at("layer_types").is_array())
    for (const json& t : j.at("layer_types"))
      if (t != "full_attention")
        throw UserError(src + ": 'layer_types' holds " + t.dump() + ": only \"full_attention\" layers are implemented");

  Qwen25VLTextConfig c;
  c.vocab_size = r.positive("vocab_size");
  c.hidden_size = r.positive("hidden_size");
  c.intermediate_size = r.positive("intermediate_size");
  c.num_layers = r.positive("num_hidden_layers");
  c.num_heads = r.positive("num_attention_heads");
  c.num_kv_heads = r.positive("num_key_value_heads", c.num_heads);
  if (c.hidden_size % c.num_heads != 0)
    r.fail("num_attention_heads", "a divisor of hidden_size = " + std::to_string(c.hidden_size));
  c.head_dim = c.hidden_size / c.num_heads;
  if (r.given("head_dim") && r.positive("head_dim") != c.head_dim)
    r.fail("head_dim", "hidden_size / num_attention_heads = " + std::to_string(c.head_dim));
  if (c.head_dim % 2 != 0) r.fail("num_attention_heads", "a count giving an even head dim (RoPE rotates pairs)");
  if (c.num_heads % c.num_kv_heads != 0)
    r.fail("num_key_value_heads", "a divisor of num_attention_heads = " + std::to_string(c.num_heads));
  c.rms_norm_eps = r.positive_number("rms_norm_eps", 1e-6);
  c.rope_theta = read_rope(j, src, c.head_dim);
  return c;
}

Qwen25VLTextConfig Qwen25VLTextConfig::load(const std::string& dir) {
  return from_json(read_component_config(dir), dir + "/config.json");
}

}  // namespace dattn
