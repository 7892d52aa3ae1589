// WanTransformerConfig: reading and validating transformer/config.json.
#include "dattn/models/wan/config.h"

#include <optional>

#include "dattn/core/error.h"
#include "dattn/io/weight_store.h"

namespace dattn {
namespace {

using json = nlohmann::json;

// Reads fields of one config object; every error names the file, the field, the value and the expectation.
class Reader {
 public:
  Reader(const json& j, const std::string& source) : j_(j), source_(source) {}

  [[noreturn]] void fail(const std::string& key, const std::string& expected) const {
    const std::string got = j_.contains(key) ? j_.at(key).dump() : "nothing (the field is missing)";
    throw UserError(source_ + ": '" + key + "' must be " + expected + ", got " + got);
  }
  bool given(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  std::int64_t positive(const std::string& key, std::optional<std::int64_t> fallback = std::nullopt) const {
    if (!given(key)) {
      if (fallback) return *fallback;
      fail(key, "a positive integer (required)");
    }
    const json& v = j_.at(key);
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > (1LL << 31))
      fail(key, "a positive integer");
    return v.get<std::int64_t>();
  }
  bool boolean(const std::string& key, bool fallback) const {
    if (!given(key)) return fallback;
    if (!j_.at(key).is_boolean()) fail(key, "true or false");
    return j_.at(key).get<bool>();
  }
  double number(const std::string& key, double fallback) const {
    if (!given(key)) return fallback;
    if (!j_.at(key).is_number()) fail(key, "a number");
    return j_.at(key).get<double>();
  }
  std::array<std::int64_t, 3> triple(const std::string& key) const {
    const json* v = given(key) ? &j_.at(key) : nullptr;
    const std::string what = "a list of 3 positive integers (t, h, w)";
    if (!v || !v->is_array() || v->size() != 3) fail(key, what + (v ? "" : " (required)"));
    std::array<std::int64_t, 3> out{};
    for (int i = 0; i < 3; ++i) {
      const json& e = (*v)[i];
      if (!e.is_number_integer() || e.get<long long>() < 1 || e.get<long long>() > 64) fail(key, what);
      out[i] = e.get<std::int64_t>();
    }
    return out;
  }
  void must_be_null(const std::string& key, const std::string& why) const {
    if (given(key)) throw UserError(source_ + ": '" + key + "' is " + j_.at(key).dump() + ": " + why);
  }

 private:
  const json& j_;
  const std::string& source_;
};

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
