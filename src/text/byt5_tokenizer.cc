// ByT5Tokenizer: the added tokens of the folder's config files, then one id per UTF-8 byte.
#include "dattn/text/byt5_tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "text/added_tokens.h"
#include "text/json_file.h"
#include "text/utf8.h"

namespace dattn {

using namespace text_detail;

namespace {

struct Entry {
  int id;
  bool lstrip = false, rstrip = false;
};

// added_tokens_decoder: {"ID": {"content": ..., "lstrip": ..., "rstrip": ...}}.
void read_decoder(const nlohmann::json& cfg, const std::string& path, std::map<std::string, Entry>& out) {
  const auto it = cfg.find("added_tokens_decoder");
  if (it == cfg.end()) return;
  if (!it->is_object()) throw UserError(path + ": added_tokens_decoder must be an object of id -> token");
  for (const auto& [key, t] : it->items()) {
    int id = -1;
    try {
      std::size_t used = 0;
      id = std::stoi(key, &used);
      if (used != key.size() || id < 0) id = -1;
    } catch (const std::exception&) {
    }
    const auto content = token_text(t);
    if (id < 0 || !content || content->empty())
      throw UserError(path + ": added_tokens_decoder entry \"" + key + "\" needs an id >= 0 and a non-empty content");
    if (t.is_object() && t.value("single_word", false))
      throw UserError(path + ": added token \"" + *content + "\" has single_word true, which is not implemented");
    Entry e{id};
    if (t.is_object()) e.lstrip = t.value("lstrip", false), e.rstrip = t.value("rstrip", false);
    out[*content] = e;
  }
}

// added_tokens.json: {"content": id}; tokens not in added_tokens_decoder get the default flags.
void read_added_json(const std::string& path, std::map<std::string, Entry>& out) {
  const auto j = read_optional_json_object(path);
  if (!j) return;
  for (const auto& [content, id] : j->items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || content.empty())
      throw UserError(path + ": \"" + content + "\" maps to " + id.dump() + "; expected an id >= 0");
    const auto known = out.find(content);
    if (known != out.end() && known->second.id != id.get<int>())
      throw UserError(path + ": \"" + content + "\" is id " + id.dump() + " here but " +
                      std::to_string(known->second.id) + " in tokenizer_config.json");
    if (known == out.end()) out[content] = Entry{id.get<int>()};
  }
}

}  // namespace

ByT5Tokenizer ByT5Tokenizer::load(const std::string& dir) try {
  const auto file = [&](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  const std::string config_path = file("tokenizer_config.json");
  const nlohmann::json cfg =
      read_json_object(config_path, "a ByT5 tokenizer folder holds tokenizer_config.json (ByT5Tokenizer)");
  const auto special_map = read_optional_json_object(file("special_tokens_map.json"));

  std::map<std::string, Entry> tokens;
  read_decoder(cfg, config_path, tokens);
  read_added_json(file("added_tokens.json"), tokens);

  // pad / eos / unk: named in tokenizer_config.json (or special_tokens_map.json), ids from the added tokens.
  auto special = [&](const char* key, const char* fallback) -> std::pair<std::string, int> {
    std::optional<std::string> text;
    if (auto it = cfg.find(key); it != cfg.end() && !it->is_null()) text = token_text(*it);
    if (!text && special_map)
      if (auto it = special_map->find(key); it != special_map->end()) text = token_text(*it);
    const std::string t = text.value_or(fallback);
    const auto e = tokens.find(t);
    if (e == tokens.end())
      throw UserError(config_path + ": " + key + " \"" + t +
                      "\" has no id in added_tokens_decoder or added_tokens.json");
    return {t, e->second.id};
  };
  ByT5Tokenizer tok;
  tok.pad_id_ = special("pad_token", "<pad>").second;
  tok.eos_id_ = special("eos_token", "</s>").second;
  tok.unk_id_ = special("unk_token", "<unk>").second;
  std::vector<int> ids{tok.pad_id_, tok.eos_id_, tok.unk_id_};
  std::sort(ids.begin(), ids.end());
  // ByT5Tokenizer numbers the bytes after its three specials, which it places at 0, 1, 2.
  if (ids != std::vector<int>{0, 1, 2})
    throw UserError(config_path + ": pad, eos and unk tokens must have ids 0, 1 and 2 (ByT5Tokenizer's layout), got " +
                    std::to_string(tok.pad_id_) + ", " + std::to_string(tok.eos_id_) + ", " +
                    std::to_string(tok.unk_id_));
  tok.byte_offset_ = 3;

  if (auto it = cfg.find("extra_ids"); it != cfg.end() && it->is_number_integer())
    for (int i = 0; i < it->get<int>(); ++i)
      if (!tokens.count("<extra_id_" + std::to_string(i) + ">"))
        throw UserError(config_path + ": extra_ids is " + it->dump() + " but <extra_id_" + std::to_string(i) +
                        "> is not in added_tokens_decoder; only listed sentinel tokens are implemented");
  for (const auto& [content, e] : tokens) {
    decode_utf8(content, config_path + ": added token");
    tok.added_.push_back({content, e.id, e.lstrip, e.rstrip});
  }
  return tok;
} catch (const nlohmann::json::exception& e) {  // a field of the wrong type
  throw UserError(dir + ": a ByT5 tokenizer file has a field of the wrong type: " + e.what());
}

std::size_t ByT5Tokenizer::added_token_count() const { return added_.size(); }

std::vector<int> ByT5Tokenizer::encode_pieces(std::string_view text) const {
  decode_utf8(text, "the text to tokenize");
  std::vector<AddedTokenSpec> specs;
  specs.reserve(added_.size());
  for (const Added& a : added_) specs.push_back({a.content, a.id, a.lstrip, a.rstrip});
  std::vector<int> ids;
  // Python's str.strip() whitespace: ByT5Tokenizer strips the neighbours of an lstrip / rstrip token.
  for (const Segment& s : split_added_tokens(text, specs, &is_python_space)) {
    if (s.token_id >= 0) {
      ids.push_back(s.token_id);
      continue;
    }
    for (char c : s.text) ids.push_back(static_cast<unsigned char>(c) + byte_offset_);
  }
  return ids;
}

TokenizedBatch ByT5Tokenizer::encode(const std::vector<std::string>& texts, int max_length) const {
  if (max_length < 1) throw UserError("ByT5 tokenizer max_length must be >= 1, got " + std::to_string(max_length));
  const auto L = static_cast<std::size_t>(max_length);
  TokenizedBatch out;
  out.batch = static_cast<std::int64_t>(texts.size());
  out.length = max_length;
  out.input_ids.assign(texts.size() * L, pad_id_);
  out.attention_mask.assign(texts.size() * L, 0);
  for (std::size_t b = 0; b < texts.size(); ++b) {
    std::vector<int> ids = encode_pieces(texts[b]);
    ids.resize(std::min(ids.size(), L - 1));  // room for the end-of-sequence token
    ids.push_back(eos_id_);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      out.input_ids[b * L + i] = ids[i];
      out.attention_mask[b * L + i] = 1;
    }
  }
  return out;
}

}  // namespace dattn
