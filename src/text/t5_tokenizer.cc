// T5Tokenizer: sentencepiece pieces arranged as transformers' T5TokenizerFast arranges them.
#include <sentencepiece_processor.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "dattn/text/tokenizer.h"
#include "text/json_file.h"
#include "text/utf8.h"

namespace dattn {

struct T5Tokenizer::Impl {
  sentencepiece::SentencePieceProcessor sp;
  // Special tokens matched in the raw text (Hugging Face's added tokens), longest first.
  std::vector<std::pair<std::string, int>> specials;
};

namespace {

using text_detail::token_text;

// Tokens of `key` (a list, or a dict of lists as some configs write extra_special_tokens).
void collect_tokens(const nlohmann::json& v, std::vector<std::string>& out) {
  if (auto t = token_text(v)) return out.push_back(*t);
  if (v.is_array() || v.is_object())
    for (const auto& e : v) collect_tokens(e, out);
}

}  // namespace

std::int64_t TokenizedBatch::valid_length(std::int64_t b) const {
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < length; ++i) n += attention_mask[b * length + i] != 0;
  return n;
}

T5Tokenizer::T5Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
T5Tokenizer::T5Tokenizer(T5Tokenizer&&) noexcept = default;
T5Tokenizer& T5Tokenizer::operator=(T5Tokenizer&&) noexcept = default;
T5Tokenizer::~T5Tokenizer() = default;

T5Tokenizer T5Tokenizer::load(const std::string& dir) {
  const std::string model_path = (std::filesystem::path(dir) / "spiece.model").string();
  const std::string config_path = (std::filesystem::path(dir) / "tokenizer_config.json").string();
  refuse_special_file(model_path, "sentencepiece model");
  if (!std::filesystem::is_regular_file(model_path))
    throw UserError(model_path + ": missing; the T5 tokenizer needs the sentencepiece model of the checkpoint");
  auto impl = std::make_unique<Impl>();
  if (auto status = impl->sp.Load(model_path); !status.ok())
    throw UserError(model_path + ": cannot load the sentencepiece model: " + status.ToString());
  // Nesting is bounded while parsing (collect_tokens recurses once a level).
  const nlohmann::json cfg = text_detail::read_json_object(
      config_path, "a T5 tokenizer folder holds spiece.model and tokenizer_config.json");

  T5Tokenizer tok(std::move(impl));
  sentencepiece::SentencePieceProcessor& sp = tok.impl_->sp;
  // Defaults are transformers' T5Tokenizer defaults; each token must be a piece of the model.
  auto resolve = [&](const char* key, const char* fallback) {
    std::string text = fallback;
    if (auto it = cfg.find(key); it != cfg.end() && !it->is_null()) {
      auto t = token_text(*it);
      if (!t)
        throw UserError(config_path + ": field '" + key + "' must be a token string, got " +
                        text_detail::short_dump(*it));
      text = *t;
    }
    const int id = sp.PieceToId(text);
    if (sp.IdToPiece(id) != text)
      throw UserError(config_path + ": field '" + key + "' is \"" + text + "\", which is not a piece of " + model_path);
    return std::pair{text, id};
  };
  const auto eos = resolve("eos_token", "</s>");
  const auto pad = resolve("pad_token", "<pad>");
  const auto unk = resolve("unk_token", "<unk>");
  tok.eos_id_ = eos.second, tok.pad_id_ = pad.second, tok.unk_id_ = unk.second;

  if (auto it = cfg.find("model_max_length"); it != cfg.end() && !it->is_null()) {
    if (!it->is_number() || it->get<double>() < 1)
      throw UserError(config_path + ": field 'model_max_length' must be a positive number, got " + it->dump());
    tok.model_max_length_ = static_cast<std::int64_t>(std::min(it->get<double>(), double(INT32_MAX)));
  }

  // Added tokens: matched in the text before sentencepiece sees it. Those that are not pieces of the
  // model (umT5's <extra_id_N> sentinels) are not matched.
  std::vector<std::string> texts = {eos.first, pad.first, unk.first};
  for (const char* key : {"additional_special_tokens", "extra_special_tokens"})
    if (auto it = cfg.find(key); it != cfg.end()) collect_tokens(*it, texts);
  for (const std::string& t : texts) {
    const int id = sp.PieceToId(t);
    const bool known = std::any_of(tok.impl_->specials.begin(), tok.impl_->specials.end(),
                                   [&](const auto& s) { return s.first == t; });
    if (!t.empty() && sp.IdToPiece(id) == t && !known) tok.impl_->specials.emplace_back(t, id);
  }
  std::sort(tok.impl_->specials.begin(), tok.impl_->specials.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return tok;
}

int T5Tokenizer::vocab_size() const { return impl_->sp.GetPieceSize(); }

std::vector<int> T5Tokenizer::encode_pieces(std::string_view text) const {
  // Validates UTF-8 and turns U+0085 into a space (see the header).
  std::string clean;
  for (char32_t c : text_detail::decode_utf8(text, "the text to tokenize"))
    text_detail::append_utf8(clean, c == 0x85 ? U' ' : c);

  std::vector<int> ids;
  auto encode_segment = [&](std::string_view segment) {
    if (segment.empty()) return;
    std::vector<int> piece_ids;
    if (auto status = impl_->sp.Encode(segment, &piece_ids); !status.ok())
      throw std::runtime_error("sentencepiece failed to encode text: " + status.ToString());
    ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
  };
  std::size_t start = 0, pos = 0;
  while (pos < clean.size()) {
    const auto hit = std::find_if(impl_->specials.begin(), impl_->specials.end(), [&](const auto& s) {
      return clean.compare(pos, s.first.size(), s.first) == 0;
    });
    if (hit == impl_->specials.end()) {
      ++pos;
      continue;
    }
    encode_segment(std::string_view(clean).substr(start, pos - start));
    ids.push_back(hit->second);
    pos += hit->first.size();
    start = pos;
  }
  encode_segment(std::string_view(clean).substr(start));
  return ids;
}

TokenizedBatch T5Tokenizer::encode(const std::vector<std::string>& texts, int max_length) const {
  if (max_length < 1) throw UserError("tokenizer max_length must be >= 1, got " + std::to_string(max_length));
  TokenizedBatch out;
  out.batch = static_cast<std::int64_t>(texts.size());
  out.length = max_length;
  out.input_ids.assign(texts.size() * max_length, pad_id_);
  out.attention_mask.assign(texts.size() * max_length, 0);
  for (std::size_t b = 0; b < texts.size(); ++b) {
    std::vector<int> ids = encode_pieces(texts[b]);
    ids.resize(std::min<std::size_t>(ids.size(), static_cast<std::size_t>(max_length - 1)));  // room for EOS
    ids.push_back(eos_id_);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      out.input_ids[b * max_length + i] = ids[i];
      out.attention_mask[b * max_length + i] = 1;
    }
  }
  return out;
}

}  // namespace dattn
