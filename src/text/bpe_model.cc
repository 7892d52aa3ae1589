#include "text/bpe_model.h"

#include <climits>
#include <cstddef>
#include <functional>
#include <queue>
#include <utility>

#include "dattn/core/error.h"
#include "text/json_file.h"

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
  throw UserError(source + ": model.merges[" + std::to_string(rank) + "] is " + short_dump(m) +
                  "; expected [\"a\", \"b\"] or \"a b\"");
}

}  // namespace

BpeModel BpeModel::from_json(const nlohmann::json& model, const std::string& source) {
  BpeModel m;
  m.source_ = source;
  const std::string fields = source + ": model.";
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const auto v = string_field(model, key, fields); v && !v->empty())
      throw UserError(fields + key + " is " + short_dump(model[key]) + "; only an empty one is implemented");
  if (const auto d = number_field(model, "dropout", fields); d && *d != 0)
    throw UserError(fields + "dropout is " + short_dump(model["dropout"]) + "; only null (no dropout) is implemented");
  if (bool_field(model, "byte_fallback", false, fields))
    throw UserError(fields + "byte_fallback is true; only false is implemented");
  m.ignore_merges_ = bool_field(model, "ignore_merges", false, fields);
  m.fuse_unk_ = bool_field(model, "fuse_unk", false, fields);

  const auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) throw UserError(source + ": model.vocab must be an object");
  for (const auto& [token, id] : vocab->items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > INT_MAX)
      throw UserError(source + ": model.vocab[\"" + token + "\"] is " + short_dump(id) +
                      "; expected an id from 0 to 2147483647");
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
  if (const auto unk = string_field(model, "unk_token", fields)) {
    const auto u = m.vocab_.find(*unk);
    if (u == m.vocab_.end()) throw UserError(fields + "unk_token \"" + *unk + "\" is not in model.vocab");
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
  bool after_unk = false;  // the previous code point was unknown (fuse_unk joins a run of them)
  for (std::size_t i = 0; i < piece.size();) {
    std::size_t len = 1;
    while (i + len < piece.size() && (static_cast<unsigned char>(piece[i + len]) & 0xC0) == 0x80) ++len;
    const std::string_view ch = piece.substr(i, len);
    if (auto id = id_of(ch)) {
      symbols.push_back(*id);
      after_unk = false;
    } else if (unk_id_) {
      if (!(fuse_unk_ && after_unk)) symbols.push_back(*unk_id_);
      after_unk = true;
    } else {
      throw UserError("the text has \"" + std::string(ch) + "\", which is not in the vocabulary of " + source_ +
                      " (and the model has no unk_token)");
    }
    i += len;
  }
  merge(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

std::size_t BpeModel::merge(std::vector<int>& symbols) const {
  // A linked list of the symbols (merging one into its left neighbour is O(1)) and a min-heap of the
  // adjacent pairs by (rank, position), as Hugging Face's Word::merge_all: O(n log n) where rescanning every
  // pair after each merge was O(n^2) (a 120 KB word took 35 s). Entries go stale when a neighbour merges;
  // one is skipped unless its pair is still adjacent with the same rank, so the pair taken is always the
  // lowest-ranked, leftmost among equals, of the current symbols: the same merges as the rescan did.
  const std::size_t n = symbols.size(), none = n;
  if (n < 2) return 0;
  std::vector<std::size_t> prev(n), next(n);
  std::vector<char> alive(n, 1);
  for (std::size_t i = 0; i < n; ++i) prev[i] = i == 0 ? none : i - 1, next[i] = i + 1;
  struct Pair {
    int rank;
    std::size_t pos;
    bool operator>(const Pair& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Pair, std::vector<Pair>, std::greater<Pair>> heap;
  const auto find = [&](std::size_t i) {
    return next[i] == none ? merges_.end() : merges_.find(key(symbols[i], symbols[next[i]]));
  };
  const auto push = [&](std::size_t i) {
    if (const auto it = find(i); it != merges_.end()) heap.push({it->second.rank, i});
  };
  for (std::size_t i = 0; i + 1 < n; ++i) push(i);
  std::size_t taken = 0;  // entries popped: at most one per push, and a merge pushes at most two
  while (!heap.empty()) {
    const Pair top = heap.top();
    heap.pop();
    ++taken;
    if (!alive[top.pos]) continue;
    const auto it = find(top.pos);
    if (it == merges_.end() || it->second.rank != top.rank) continue;  // stale: a neighbour changed
    const std::size_t i = top.pos, j = next[i];
    symbols[i] = it->second.result;
    alive[j] = 0;
    next[i] = next[j];
    if (next[j] != none) prev[next[j]] = i;
    if (prev[i] != none) push(prev[i]);
    push(i);
  }
  std::size_t w = 0;
  for (std::size_t i = 0; i != none; i = next[i]) symbols[w++] = symbols[i];
  symbols.resize(w);
  return taken;
}

}  // namespace dattn::text_detail
