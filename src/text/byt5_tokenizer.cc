// ByT5Tokenizer: the added tokens of the folder's config files, then one id per UTF-8 byte.
#include "dattn/text/byt5_tokenizer.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/core/whole_number.h"
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

constexpr std::uint64_t kMaxId = INT_MAX;  // ids are ints downstream

// added_tokens_decoder: {"ID": {"content": ..., "lstrip": ..., "rstrip": ...}}.
void read_decoder(const nlohmann::json& cfg, const std::string& path, std::map<std::string, Entry>& out) {
  const auto it = cfg.find("added_tokens_decoder");
  if (it == cfg.end()) return;
  if (!it->is_object()) throw UserError(path + ": added_tokens_decoder must be an object of id -> token");
  for (const auto& [key, t] : it->items()) {
    const auto content = token_text(t);
    if (!content || content->empty())
      throw UserError(path + ": added_tokens_decoder entry \"" + key + "\" needs a non-empty content");
    // Decimal digits only, checked: std::stoi wrapped nothing but refused 2^31 without saying why.
    const auto id = parse_whole_number(key, kMaxId);
    if (!id)
      throw UserError(path + ": added_tokens_decoder gives token \"" + *content + "\" the id \"" + key +
                      "\"; expected a whole number from 0 to " + std::to_string(kMaxId));
    const std::string fields = path + ": added_tokens_decoder[\"" + key + "\"].";
    if (bool_field(t, "single_word", false, fields))
      throw UserError(path + ": added token \"" + *content + "\" has single_word true, which is not implemented");
    for (const char* flag : {"normalized", "special"}) (void)bool_field(t, flag, false, fields);  // typed, unused
    Entry e{static_cast<int>(*id)};
    e.lstrip = bool_field(t, "lstrip", false, fields), e.rstrip = bool_field(t, "rstrip", false, fields);
    out[*content] = e;
  }
}

// added_tokens.json: {"content": id}; tokens not in added_tokens_decoder get the default flags.
void read_added_json(const std::string& path, std::map<std::string, Entry>& out) {
  const auto j = read_optional_json_object(path);
  if (!j) return;
  for (const auto& [content, id] : j->items()) {
    // An id past int was narrowed (4294967680 became 384, 2^31 a negative id): checked before narrowing.
    const bool in_range = id.is_number_unsigned() ? id.get<std::uint64_t>() <= kMaxId
                                                  : id.is_number_integer() && id.get<std::int64_t>() >= 0;
    if (!in_range || content.empty())
      throw UserError(path + ": token \"" + content + "\" has id " + short_dump(id) +
                      "; expected a whole number from 0 to " + std::to_string(kMaxId) +
                      (content.empty() ? " and a non-empty token" : ""));
    const int value = id.get<int>();
    const auto known = out.find(content);
    if (known != out.end() && known->second.id != value)
      throw UserError(path + ": \"" + content + "\" is id " + std::to_string(value) + " here but " +
                      std::to_string(known->second.id) + " in tokenizer_config.json");
    if (known == out.end()) out[content] = Entry{value};
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
    // A value that is no token was passed over for the fallback in silence.
    const auto token_of = [&](const nlohmann::json& j, const std::string& path) -> std::optional<std::string> {
      const auto it = j.find(key);
      if (it == j.end() || it->is_null()) return std::nullopt;
      auto t = token_text(*it);
      if (!t)
        throw UserError(path + ": " + key + " is " + short_dump(*it) +
                        "; expected a token string or {\"content\": ...}");
      return t;
    };
    std::optional<std::string> text = token_of(cfg, config_path);
    if (!text && special_map) text = token_of(*special_map, file("special_tokens_map.json"));
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

  // Only listed sentinels are implemented: each of the extra_ids must be an added token.
  const std::int64_t extra_ids = integer_field(cfg, "extra_ids", config_path + ": ").value_or(0);
  if (extra_ids < 0)
    throw UserError(config_path + ": extra_ids is " + std::to_string(extra_ids) + "; expected a number >= 0");
  for (std::int64_t i = 0; i < extra_ids; ++i)
    if (!tokens.count("<extra_id_" + std::to_string(i) + ">"))
      throw UserError(config_path + ": extra_ids is " + std::to_string(extra_ids) + " but <extra_id_" +
                      std::to_string(i) +
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
