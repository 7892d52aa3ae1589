// BpeTokenizer: tokenizer.json's added tokens, normalizer, pre-tokenizer and BPE model, in that order.
#include "dattn/text/bpe_tokenizer.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/core/files.h"
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

nlohmann::json parse(const std::string& text, const std::string& source) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object()) throw UserError(source + ": expected a JSON object at the top level");
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(source + ": not valid JSON: " + e.what());
  }
}

std::vector<AddedTokenSpec> read_added_tokens(const nlohmann::json& j, const std::string& source) {
  std::vector<AddedTokenSpec> out;
  const auto it = j.find("added_tokens");
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) throw UserError(source + ": added_tokens must be a list");
  for (const auto& t : *it) {
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
        !t["content"].is_string() || t["content"].get<std::string>().empty())
      throw UserError(source + ": added_tokens entry " + t.dump() + " needs an integer id and a non-empty content");
    AddedTokenSpec s;
    s.content = t["content"].get<std::string>();
    // Checked before narrowing: 2^32 + 1 became id 1, and a negative id was taken.
    if (t["id"].get<long long>() < 0 || t["id"].get<long long>() > std::numeric_limits<int>::max())
      throw UserError(source + ": added token \"" + s.content + "\" has id " + t["id"].dump() +
                      "; expected 0 to " + std::to_string(std::numeric_limits<int>::max()));
    s.id = t["id"].get<int>();
    s.lstrip = t.value("lstrip", false), s.rstrip = t.value("rstrip", false);
    s.normalized = t.value("normalized", false), s.special = t.value("special", false);
    if (t.value("single_word", false))
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
  const std::string type = it->is_object() ? it->value("type", "") : "";
  if (type != "ByteLevel")
    throw UserError(source + ": post_processor " + (type.empty() ? it->dump() : "type \"" + type + "\"") +
                    " is not implemented; implemented: null, ByteLevel");
}

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot be opened for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

BpeTokenizer BpeTokenizer::load(const std::string& dir) {
  const std::string json_path = (std::filesystem::path(dir) / "tokenizer.json").string();
  const std::string config_path = (std::filesystem::path(dir) / "tokenizer_config.json").string();
  refuse_special_file(json_path, "tokenizer file");
  if (!std::filesystem::exists(json_path))
    throw UserError(json_path + ": missing; a byte-level BPE tokenizer folder holds the checkpoint's tokenizer.json");
  const auto config = read_optional_json_object(config_path);
  BpeTokenizer tok = from_json(read_file_text(json_path), json_path, config ? config->dump() : "{}", config_path);
  if (!config) tok.config_source_ = json_path;
  return tok;
}

BpeTokenizer BpeTokenizer::from_json(const std::string& tokenizer_json, const std::string& source,
                                     const std::string& tokenizer_config_json, const std::string& config_source) {
  try {
    return from_parsed(parse(tokenizer_json, source), source, parse(tokenizer_config_json, config_source),
                       config_source);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    throw UserError(source + " or " + config_source + ": a field has the wrong type: " + e.what());
  }
}

BpeTokenizer BpeTokenizer::from_parsed(const nlohmann::json& j, const std::string& source, const nlohmann::json& cfg,
                                       const std::string& config_source) {
  auto impl = std::make_unique<Impl>();
  const auto model = j.find("model");
  if (model == j.end() || !model->is_object() || model->value("type", "") != "BPE")
    throw UserError(source + ": model.type must be \"BPE\" for a byte-level BPE tokenizer, got " +
                    (model == j.end() ? std::string("no model") : model->value("type", model->dump())));
  impl->model = BpeModel::from_json(*model, source);
  impl->normalizer = Normalizer::from_json(j.value("normalizer", nlohmann::json()), source);
  impl->pre_tokenizer = PreTokenizer::from_json(j.value("pre_tokenizer", nlohmann::json()), source);
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
    if (!text) throw UserError(config_source + ": field '" + key + "' must be a token string, got " + it->dump());
    const auto id = tok.token_id(*text);
    if (!id)
      throw UserError(config_source + ": field '" + key + "' is \"" + *text + "\", which is not a token of " + source);
    return id;
  };
  tok.pad_id_ = resolve("pad_token");
  tok.eos_id_ = resolve("eos_token");
  if (!tok.pad_id_)
    if (auto p = j.find("padding");
        p != j.end() && p->is_object() && p->contains("pad_id") && (*p)["pad_id"].is_number_integer())
      tok.pad_id_ = (*p)["pad_id"].get<int>();
  if (auto it = cfg.find("model_max_length"); it != cfg.end() && it->is_number() && it->get<double>() >= 1)
    tok.model_max_length_ = static_cast<std::int64_t>(std::min(it->get<double>(), double(INT32_MAX)));
  return tok;
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
