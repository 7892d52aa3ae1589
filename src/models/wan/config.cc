// WanTransformerConfig: reading and validating transformer/config.json.
#include "dattn/models/wan/config.h"

#include <optional>

#include "dattn/core/error.h"
#include "models/config_fields.h"
#include "dattn/io/weight_store.h"

namespace dattn {
namespace {

using json = nlohmann::json;

using Reader = models::ConfigFields;

}  // namespace

WanTransformerConfig WanTransformerConfig::from_json(const json& j, const std::string& source) {
  if (!j.is_object()) throw UserError(source + ": expected a JSON object");
  Reader r(j, source);
  if (r.given("_class_name")) {
    const json& c = j.at("_class_name");
    if (!c.is_string() || c.get<std::string>() != "WanTransformer3DModel")
      throw UserError(source + ": '_class_name' is " + c.dump() +
                      "; dattn runs WanTransformer3DModel checkpoints here");
  }
  const std::string i2v = "image-to-video conditioning (I2V, CLIP image embeddings) is not supported";
  r.must_be_null("image_dim", i2v);
  r.must_be_null("added_kv_proj_dim", i2v);
  if (r.given("qk_norm")) {
    const json& q = j.at("qk_norm");
    if (!q.is_string() || q.get<std::string>() != "rms_norm_across_heads")
      r.fail("qk_norm", "\"rms_norm_across_heads\" (the only query/key norm dattn implements)");
  }

  WanTransformerConfig c;
  c.patch_size = r.triple("patch_size");
  c.num_attention_heads = r.positive("num_attention_heads");
  c.attention_head_dim = r.positive("attention_head_dim");
  c.in_channels = r.positive("in_channels");
  c.out_channels = r.positive("out_channels", c.in_channels);
  c.text_dim = r.positive("text_dim");
  c.freq_dim = r.positive("freq_dim");
  c.ffn_dim = r.positive("ffn_dim");
  c.num_layers = r.positive("num_layers");
  // The largest published DiTs have 40-60 blocks; 10^6 would build a parameter list of gigabytes and a
  // checkpoint of terabytes before anything else could refuse it.
  if (c.num_layers > kWanMaxLayers) r.fail("num_layers", "at most " + std::to_string(kWanMaxLayers));
  c.cross_attn_norm = r.boolean("cross_attn_norm", true);
  c.eps = r.number("eps", 1e-6);
  c.rope_max_seq_len = r.positive("rope_max_seq_len", 1024);
  if (c.attention_head_dim % 2 != 0) r.fail("attention_head_dim", "even (rotary embedding works on pairs)");
  if (!(c.eps > 0)) r.fail("eps", "a positive number");
  return c;
}

WanTransformerConfig WanTransformerConfig::load(const std::string& dir) {
  return from_json(read_component_config(dir), dir + "/config.json");
}

}  // namespace dattn
