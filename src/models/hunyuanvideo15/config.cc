// HunyuanVideo15TransformerConfig: reading and validating transformer/config.json.
#include "dattn/models/hunyuanvideo15/config.h"

#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"
#include "models/config_fields.h"

namespace dattn {

HunyuanVideo15TransformerConfig HunyuanVideo15TransformerConfig::from_json(const nlohmann::json& j,
                                                                           const std::string& source) {
  if (!j.is_object()) throw UserError(source + ": expected a JSON object");
  models::ConfigFields r(j, source);
  if (r.given("_class_name")) {
    const auto& c = j.at("_class_name");
    if (!c.is_string() || c.get<std::string>() != "HunyuanVideo15Transformer3DModel")
      throw UserError(source + ": '_class_name' is " + c.dump() +
                      "; expected HunyuanVideo15Transformer3DModel here");
  }
  if (r.boolean("use_meanflow", false))
    r.fail("use_meanflow", "false (the MeanFlow super-resolution transformers are not supported)");
  if (r.given("qk_norm") && r.text("qk_norm") != "rms_norm")
    r.fail("qk_norm", "\"rms_norm\" (the only query/key norm of HunyuanVideo-1.5)");

  HunyuanVideo15TransformerConfig c;
  c.in_channels = r.positive("in_channels");
  c.out_channels = r.positive("out_channels", c.in_channels);
  c.num_attention_heads = r.positive("num_attention_heads");
  c.attention_head_dim = r.positive("attention_head_dim");
  c.num_layers = r.positive("num_layers");
  if (c.num_layers > kHv15MaxLayers) r.fail("num_layers", "at most " + std::to_string(kHv15MaxLayers));
  c.text_embed_dim = r.positive("text_embed_dim");
  c.text_embed_2_dim = r.positive("text_embed_2_dim");
  c.image_embed_dim = r.positive("image_embed_dim");
  c.num_refiner_layers = r.positive("num_refiner_layers", 2);
  if (c.num_refiner_layers > kHv15MaxLayers) r.fail("num_refiner_layers", "at most " + std::to_string(kHv15MaxLayers));
  c.mlp_ratio = r.positive_number("mlp_ratio", 4.0);
  c.patch_size = r.positive("patch_size", 1);
  c.patch_size_t = r.positive("patch_size_t", 1);
  if (c.patch_size > 64 || c.patch_size_t > 64) r.fail("patch_size", "at most 64");
  c.rope_theta = r.positive_number("rope_theta", 256.0);
  c.task_type = r.text("task_type").value_or("i2v");
  if (c.task_type != "t2v" && c.task_type != "i2v") r.fail("task_type", "\"t2v\" or \"i2v\"");

  const std::string axes = "a list of 3 positive even integers summing to attention_head_dim (" +
                           std::to_string(c.attention_head_dim) + ")";
  if (!r.given("rope_axes_dim") || !j.at("rope_axes_dim").is_array() || j.at("rope_axes_dim").size() != 3)
    r.fail("rope_axes_dim", axes);
  std::int64_t sum = 0;
  for (int i = 0; i < 3; ++i) {
    const auto& e = j.at("rope_axes_dim")[i];
    if (!e.is_number_integer() || e.get<long long>() < 2 || e.get<long long>() % 2 != 0) r.fail("rope_axes_dim", axes);
    c.rope_axes_dim[i] = e.get<std::int64_t>();
    sum += c.rope_axes_dim[i];
  }
  if (sum != c.attention_head_dim) r.fail("rope_axes_dim", axes);
  const double mlp = static_cast<double>(c.inner_dim()) * c.mlp_ratio;
  if (mlp < 1 || mlp > double{1 << 30} || mlp != static_cast<double>(c.mlp_dim()))
    r.fail("mlp_ratio", "a ratio giving a whole feed-forward width (inner_dim x mlp_ratio)");
  return c;
}

HunyuanVideo15TransformerConfig HunyuanVideo15TransformerConfig::load(const std::string& dir) {
  return from_json(read_component_config(dir), dir + "/config.json");
}

}  // namespace dattn
