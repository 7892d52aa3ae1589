#pragma once
// The BPE model of a tokenizer.json ({"type": "BPE", "vocab": {...}, "merges": [...]}): a piece is split
// into its code points, then the adjacent pair of lowest merge rank is merged (the leftmost of equal
// ranks) until no pair of the merge list remains; each symbol is then a vocabulary id.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dattn::text_detail {

class BpeModel {
 public:
  // Throws UserError naming `source` for what it does not implement (dropout, byte_fallback,
  // continuing_subword_prefix, end_of_word_suffix), for a field of the wrong type and for merges whose
  // parts or result are not in the vocab.
  static BpeModel from_json(const nlohmann::json& model, const std::string& source);

  // Appends the ids of one pre-tokenized piece (valid UTF-8). A code point missing from the vocabulary
  // is the unk token when the model has one, else a UserError naming it.
  void encode_piece(std::string_view piece, std::vector<int>& out) const;
  std::optional<int> id_of(std::string_view token) const;
  // Applies the merges to `symbols` (vocabulary ids) in place, in O(n log n); returns the number of
  // candidate pairs it examined, at most 3 per symbol (a test bounds the work without timing it).
  std::size_t merge(std::vector<int>& symbols) const;
  std::size_t vocab_size() const { return vocab_.size(); }

 private:
  struct Merge {
    int rank, result;
  };
  static std::uint64_t key(int a, int b) { return (std::uint64_t(std::uint32_t(a)) << 32) | std::uint32_t(b); }
  std::unordered_map<std::string, int> vocab_;
  std::unordered_map<std::uint64_t, Merge> merges_;
  std::optional<int> unk_id_;
  bool ignore_merges_ = false;  // a piece that is itself in the vocabulary is one token
  bool fuse_unk_ = false;       // a run of unknown code points is one unk token
  std::string source_;
};

}  // namespace dattn::text_detail
