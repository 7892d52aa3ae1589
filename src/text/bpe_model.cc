#include "text/bpe_model.h"

#include <climits>
#include <cstddef>
#include <utility>

#include "dattn/core/error.h"

namespace dattn::text_detail {

namespace {

// A merge is ["a", "b"] (tokenizers >= 0.20) or "a b" (older files; neither part holds a space then).
std::pair<std::string, std::string> merge_parts(const nlohmann::json& m, const std::string& source, std::size_t rank) {
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
    return {m[0].get<std::string>(), m[1].get<std::string>()};
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const auto space = s.find(' ');
    if (space != std::string::npos && space > 0 && space + 1 < s.size() && s.find(' ', space + 1) == std::string::npos)
      return {s.substr(0, space), s.substr(space + 1)};
  }
  throw UserError(source + ": model.merges[" + std::to_string(rank) + "] is " + m.dump() +
                  "; expected [\"a\", \"b\"] or \"a b\"");
}

bool empty_or_null(const nlohmann::json& model, const char* key) {
  auto it = model.find(key);
  return it == model.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty());
}

}  // namespace

BpeModel BpeModel::from_json(const nlohmann::json& model, const std::string& source) {
  BpeModel m;
  m.source_ = source;
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!empty_or_null(model, key))
      throw UserError(source + ": model." + key + " is " + model[key].dump() + "; only an empty one is implemented");
  if (auto it = model.find("dropout"); it != model.end() && !it->is_null() && !(it->is_number() && *it == 0))
    throw UserError(source + ": model.dropout is " + it->dump() + "; only null (no dropout) is implemented");
  if (auto it = model.find("byte_fallback"); it != model.end() && it->is_boolean() && it->get<bool>())
    throw UserError(source + ": model.byte_fallback is true; only false is implemented");
  if (auto it = model.find("ignore_merges"); it != model.end() && it->is_boolean()) m.ignore_merges_ = it->get<bool>();

  const auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) throw UserError(source + ": model.vocab must be an object");
  for (const auto& [token, id] : vocab->items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > INT_MAX)
      throw UserError(source + ": model.vocab[\"" + token + "\"] is " + id.dump() + "; expected an id >= 0");
    m.vocab_.emplace(token, id.get<int>());
  }
  const auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) throw UserError(source + ": model.merges must be a list");
  for (std::size_t rank = 0; rank < merges->size(); ++rank) {
    const auto [a, b] = merge_parts((*merges)[rank], source, rank);
    const auto ia = m.vocab_.find(a), ib = m.vocab_.find(b), ir = m.vocab_.find(a + b);
    if (ia == m.vocab_.end() || ib == m.vocab_.end() || ir == m.vocab_.end())
      throw UserError(source + ": model.merges[" + std::to_string(rank) + "] (\"" + a + "\", \"" + b +
                      "\") has a part or a result that is not in model.vocab");
    m.merges_.emplace(key(ia->second, ib->second), Merge{static_cast<int>(rank), ir->second});  // first rank wins
  }
  if (auto it = model.find("unk_token"); it != model.end() && it->is_string()) {
    const auto u = m.vocab_.find(it->get<std::string>());
    if (u == m.vocab_.end())
      throw UserError(source + ": model.unk_token \"" + it->get<std::string>() + "\" is not in model.vocab");
    m.unk_id_ = u->second;
  }
  return m;
}

std::optional<int> BpeModel::id_of(std::string_view token) const {
  const auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::encode_piece(std::string_view piece, std::vector<int>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_)
    if (auto id = id_of(piece)) return out.push_back(*id);
  std::vector<int> symbols;
  for (std::size_t i = 0; i < piece.size();) {
    std::size_t len = 1;
    while (i + len < piece.size() && (static_cast<unsigned char>(piece[i + len]) & 0xC0) == 0x80) ++len;
    const std::string_view ch = piece.substr(i, len);
    if (auto id = id_of(ch)) {
      symbols.push_back(*id);
    } else if (unk_id_) {
      // fuse_unk is not implemented: each unknown code point is one unk token.
      symbols.push_back(*unk_id_);
    } else {
      throw UserError("the text has \"" + std::string(ch) + "\", which is not in the vocabulary of " + source_ +
                      " (and the model has no unk_token)");
    }
    i += len;
  }
  // Merge the lowest-ranked adjacent pair, the leftmost among equals, until none is in the merge list:
  // the order Hugging Face's priority queue gives.
  while (symbols.size() > 1) {
    int best_rank = INT_MAX, best_result = -1;
    std::size_t best_pos = 0;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = merges_.find(key(symbols[i], symbols[i + 1]));
      if (it != merges_.end() && it->second.rank < best_rank)
        best_rank = it->second.rank, best_result = it->second.result, best_pos = i;
    }
    if (best_result < 0) break;
    symbols[best_pos] = best_result;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best_pos) + 1);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
}

}  // namespace dattn::text_detail
