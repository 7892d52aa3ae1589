// Umt5Config: reading and validating text_encoder/config.json.
#include <optional>

#include "dattn/core/error.h"
#include "models/config_fields.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/umt5.h"

namespace dattn {
namespace {

using json = nlohmann::json;

using Reader = models::ConfigFields;

// The tanh-approximated GELU under transformers' names ("gelu" alone is the erf form).
bool is_gelu_tanh(const std::string& act) {
  return act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast";
}

void check_feed_forward(const Reader& r, const std::string& source) {
  const std::string proj = r.text("feed_forward_proj").value_or("gated-gelu");
  const bool gated = proj.rfind("gated-", 0) == 0;
  if (!gated)
    throw UserError(source + ": 'feed_forward_proj' is \"" + proj +
                    "\": only gated feed-forwards (\"gated-gelu\", as umT5 uses) are supported");
  // transformers remaps "gated-gelu" to gelu_new (tanh).
  if (proj != "gated-gelu" && !is_gelu_tanh(proj.substr(6)))
    throw UserError(source + ": 'feed_forward_proj' is \"" + proj +
                    "\": only the tanh-approximated GELU (\"gated-gelu\") is supported");
  // Configs also write the derived fields; one that disagrees means a hand-edited config.
  if (!r.boolean("is_gated_act", true))
    throw UserError(source + ": 'is_gated_act' is false but 'feed_forward_proj' is \"" + proj + "\"");
  if (const auto dense = r.text("dense_act_fn"); dense && !is_gelu_tanh(*dense))
    throw UserError(source + ": 'dense_act_fn' is \"" + *dense +
                    "\": only the tanh-approximated GELU (\"gelu_new\") is supported");
}

}  // namespace

namespace {

Umt5Config read_config(const json& j, const std::string& source, bool t5_family) {
  if (!j.is_object()) throw UserError(source + ": expected a JSON object");
  Reader r(j, source);
  const auto type = r.text("model_type");
  const bool shared = type && (*type == "t5" || *type == "mt5");
  if (type && *type != "umt5" && !(t5_family && shared))
    throw UserError(source + ": 'model_type' is \"" + *type +
                    (t5_family ? "\": expected \"t5\", \"mt5\" or \"umt5\" (a T5-family encoder)"
                               : "\": only umT5 (a relative position bias in every layer) is supported"));
  if (r.boolean("is_decoder", false))
    throw UserError(source + ": 'is_decoder' is true: only the encoder (bidirectional attention) is supported");
  check_feed_forward(r, source);

  Umt5Config c;
  c.vocab_size = r.positive("vocab_size");
  c.d_model = r.positive("d_model");
  c.d_kv = r.positive("d_kv");
  c.d_ff = r.positive("d_ff");
  c.num_layers = r.positive("num_layers");
  c.num_heads = r.positive("num_heads");
  c.num_buckets = r.positive("relative_attention_num_buckets", 32);
  c.max_distance = r.positive("relative_attention_max_distance", 128);
  c.layer_norm_epsilon = r.positive_number("layer_norm_epsilon", 1e-6);
  // Bidirectional bucketing halves the buckets, then halves again for the exact range; the log range
  // needs max_distance above it.
  if (c.num_buckets < 4 || c.num_buckets % 2 != 0)
    r.fail("relative_attention_num_buckets", "an even integer >= 4");
  if (c.max_distance <= c.num_buckets / 4)
    r.fail("relative_attention_max_distance", "greater than relative_attention_num_buckets / 4");
  c.shared_position_bias = shared;
  return c;
}

}  // namespace

Umt5Config Umt5Config::from_json(const json& j, const std::string& source) { return read_config(j, source, false); }

Umt5Config Umt5Config::from_json_t5_family(const json& j, const std::string& source) {
  return read_config(j, source, true);
}

Umt5Config Umt5Config::load(const std::string& dir) {
  return from_json(read_component_config(dir), dir + "/config.json");
}

Umt5Config Umt5Config::load_t5_family(const std::string& dir) {
  return from_json_t5_family(read_component_config(dir), dir + "/config.json");
}

}  // namespace dattn
