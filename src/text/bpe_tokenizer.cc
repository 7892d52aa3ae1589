// BpeTokenizer: tokenizer.json's added tokens, normalizer, pre-tokenizer and BPE model, in that order.
#include "dattn/text/bpe_tokenizer.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "text/added_tokens.h"
#include "text/bpe_model.h"
#include "text/json_file.h"
#include "text/normalizer.h"
#include "text/pre_tokenizer.h"
#include "text/utf8.h"

namespace dattn {

using namespace text_detail;

struct BpeTokenizer::Impl {
  BpeModel model;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  std::vector<AddedTokenSpec> raw_tokens, normalized_tokens;  // matched before / after normalization
};

namespace {

// j[key] without a copy (json::value copies the subtree), null when absent.
const nlohmann::json& field_or_null(const nlohmann::json& j, const char* key) {
  static const nlohmann::json null;
  const auto it = j.find(key);
  return it == j.end() ? null : *it;
}

std::vector<AddedTokenSpec> read_added_tokens(const nlohmann::json& j, const std::string& source) {
  std::vector<AddedTokenSpec> out;
  const auto it = j.find("added_tokens");
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) throw UserError(source + ": added_tokens must be a list");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& t = (*it)[i];
    const std::string fields = source + ": added_tokens[" + std::to_string(i) + "].";
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
        !t["content"].is_string() || t["content"].get<std::string>().empty())
      throw UserError(source + ": added_tokens entry " + short_dump(t) +
                      " needs an integer id and a non-empty content");
    AddedTokenSpec s;
    s.content = t["content"].get<std::string>();
    // Checked before narrowing: 2^32 + 1 became id 1, and a negative id was taken.
    const bool in_range = t["id"].is_number_unsigned() ? t["id"].get<std::uint64_t>() <= INT_MAX
                                                       : t["id"].get<std::int64_t>() >= 0;
    if (!in_range)
      throw UserError(source + ": added token \"" + s.content + "\" has id " + t["id"].dump() +
                      "; expected 0 to " + std::to_string(std::numeric_limits<int>::max()));
    s.id = t["id"].get<int>();
    s.lstrip = bool_field(t, "lstrip", false, fields), s.rstrip = bool_field(t, "rstrip", false, fields);
    s.normalized = bool_field(t, "normalized", false, fields), s.special = bool_field(t, "special", false, fields);
    if (bool_field(t, "single_word", false, fields))
      throw UserError(source + ": added token \"" + s.content + "\" has single_word true, which is not implemented");
    decode_utf8(s.content, source + ": added token content");
    out.push_back(std::move(s));
  }
  return out;
}

// Post-processors only matter with add_special_tokens; ByteLevel's changes offsets only, so it is the one
// accepted (with none): a TemplateProcessing that adds tokens would change the ids.
void check_post_processor(const nlohmann::json& j, const std::string& source) {
  const auto it = j.find("post_processor");
  if (it == j.end() || it->is_null()) return;
  const std::string fields = source + ": post_processor.";
  const std::string type = string_field(*it, "type", fields).value_or("");
  if (type != "ByteLevel")
    throw UserError(source + ": post_processor " + (type.empty() ? short_dump(*it) : "type \"" + type + "\"") +
                    " is not implemented; implemented: null, ByteLevel");
  for (const char* key : {"add_prefix_space", "trim_offsets", "use_regex"})  // offsets only, but typed
    (void)bool_field(*it, key, true, fields);
}

}  // namespace

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

BpeTokenizer BpeTokenizer::load(const std::string& dir) {
  const std::string json_path = (std::filesystem::path(dir) / "tokenizer.json").string();
  const std::string config_path = (std::filesystem::path(dir) / "tokenizer_config.json").string();
  const nlohmann::json j =
      read_json_object(json_path, "a byte-level BPE tokenizer folder holds the checkpoint's tokenizer.json");
  const auto config = read_optional_json_object(config_path);
  BpeTokenizer tok = from_parsed(j, json_path, config.value_or(nlohmann::json::object()), config_path);
  if (!config) tok.config_source_ = json_path;
  return tok;
}

BpeTokenizer BpeTokenizer::from_json(const std::string& tokenizer_json, const std::string& source,
                                     const std::string& tokenizer_config_json, const std::string& config_source) {
  return from_parsed(parse_json_object_text(tokenizer_json, source), source,
                     parse_json_object_text(tokenizer_config_json, config_source), config_source);
}

BpeTokenizer BpeTokenizer::from_parsed(const nlohmann::json& j, const std::string& source, const nlohmann::json& cfg,
                                       const std::string& config_source) try {
  auto impl = std::make_unique<Impl>();
  const auto model = j.find("model");
  const auto model_type = model == j.end() ? std::nullopt : string_field(*model, "type", source + ": model.");
  if (!model_type || *model_type != "BPE")
    throw UserError(source + ": model.type must be \"BPE\" for a byte-level BPE tokenizer, got " +
                    (model == j.end() ? std::string("no model") : model_type ? *model_type : short_dump(*model)));
  impl->model = BpeModel::from_json(*model, source);
  impl->normalizer = Normalizer::from_json(field_or_null(j, "normalizer"), source);
  impl->pre_tokenizer = PreTokenizer::from_json(field_or_null(j, "pre_tokenizer"), source);
  check_post_processor(j, source);
  for (AddedTokenSpec& t : read_added_tokens(j, source))
    // A normalized token is matched in normalized text; with no normalizer that is the raw text.
    (t.normalized && !impl->normalizer.is_identity() ? impl->normalized_tokens : impl->raw_tokens).push_back(t);

  BpeTokenizer tok(std::move(impl));
  tok.config_source_ = config_source;
  auto resolve = [&](const char* key) -> std::optional<int> {
    const auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return std::nullopt;
    const auto text = token_text(*it);
    if (!text) throw UserError(config_source + ": field '" + key + "' must be a token string, got " + short_dump(*it));
    const auto id = tok.token_id(*text);
    if (!id)
      throw UserError(config_source + ": field '" + key + "' is \"" + *text + "\", which is not a token of " + source);
    return id;
  };
  tok.pad_id_ = resolve("pad_token");
  tok.eos_id_ = resolve("eos_token");
  if (auto p = j.find("padding"); p != j.end() && !p->is_null()) {
    if (!p->is_object()) throw UserError(source + ": padding is " + short_dump(*p) + "; expected an object or null");
    const auto pad = integer_field(*p, "pad_id", source + ": padding.");
    if (pad && (*pad < 0 || *pad > INT_MAX))
      throw UserError(source + ": padding.pad_id is " + std::to_string(*pad) + "; expected 0 to 2147483647");
    if (!tok.pad_id_ && pad) tok.pad_id_ = static_cast<int>(*pad);
  }
  if (const auto max = number_field(cfg, "model_max_length", config_source + ": ")) {
    if (!(*max >= 1)) throw UserError(config_source + ": model_max_length is " + short_dump(cfg["model_max_length"]) +
                                      "; expected a number >= 1");
    tok.model_max_length_ = static_cast<std::int64_t>(std::min(*max, double(INT32_MAX)));
  }
  return tok;
} catch (const nlohmann::json::exception& e) {  // a field of the wrong type that no typed read names first
  throw UserError(source + " or " + config_source + ": a field has the wrong type: " + e.what());
}

std::optional<int> BpeTokenizer::token_id(std::string_view token) const {
  for (const auto* list : {&impl_->raw_tokens, &impl_->normalized_tokens})
    for (const AddedTokenSpec& t : *list)
      if (t.content == token) return t.id;
  return impl_->model.id_of(token);
}

int BpeTokenizer::pad_id() const {
  if (!pad_id_)
    throw UserError(config_source_ +
                    ": no pad_token (tokenizer_config.json) or padding.pad_id (tokenizer.json); "
                    "padding needs one");
  return *pad_id_;
}

std::vector<int> BpeTokenizer::encode(std::string_view text) const {
  decode_utf8(text, "the text to tokenize");  // refuse malformed input before any step sees it
  std::vector<int> ids;
  for (const Segment& raw : split_added_tokens(text, impl_->raw_tokens, &is_rust_space)) {
    if (raw.token_id >= 0) {
      ids.push_back(raw.token_id);
      continue;
    }
    const std::string normalized = impl_->normalizer.apply(raw.text);
    for (const Segment& seg : split_added_tokens(normalized, impl_->normalized_tokens, &is_rust_space)) {
      if (seg.token_id >= 0) {
        ids.push_back(seg.token_id);
        continue;
      }
      for (const std::string& piece : impl_->pre_tokenizer.apply(seg.text)) impl_->model.encode_piece(piece, ids);
    }
  }
  return ids;
}

TokenizedBatch BpeTokenizer::encode_batch(const std::vector<std::string>& texts, int max_length) const {
  if (max_length < 1) throw UserError("tokenizer max_length must be >= 1, got " + std::to_string(max_length));
  const int pad = pad_id();
  const auto L = static_cast<std::size_t>(max_length);
  TokenizedBatch out;
  out.batch = static_cast<std::int64_t>(texts.size());
  out.length = max_length;
  out.input_ids.assign(texts.size() * L, pad);
  out.attention_mask.assign(texts.size() * L, 0);
  for (std::size_t b = 0; b < texts.size(); ++b) {
    const std::vector<int> ids = encode(texts[b]);
    for (std::size_t i = 0; i < std::min(ids.size(), L); ++i) {
      out.input_ids[b * L + i] = ids[i];
      out.attention_mask[b * L + i] = 1;
    }
  }
  return out;
}

}  // namespace dattn
