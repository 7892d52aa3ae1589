// The BPE merge loop: the same merges as the plain rescan-every-pair loop it replaced (random merge lists
// and words against that loop, written here), fuse_unk, and a bound on its work for one long word, counted
// rather than timed (a 120 KB word took 35 s when every merge rescanned the word).
#include <gtest/gtest.h>

#include <climits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "dattn/text/bpe_tokenizer.h"
#include "golden_case.h"
#include "text/bpe_model.h"

using namespace dattn;
using nlohmann::json;

namespace {

// The loop as it was: merge the lowest-ranked adjacent pair, the leftmost among equals, until none is left.
std::vector<std::string> rescan_merge(std::vector<std::string> symbols,
                                      const std::map<std::pair<std::string, std::string>, int>& ranks) {
  while (symbols.size() > 1) {
    int best = INT_MAX;
    std::size_t at = 0;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i)
      if (auto it = ranks.find({symbols[i], symbols[i + 1]}); it != ranks.end() && it->second < best)
        best = it->second, at = i;
    if (best == INT_MAX) break;
    symbols[at] += symbols[at + 1];
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  return symbols;
}

TEST(BpeMerge, SameMergesAsTheRescanOnRandomWords) {
  std::mt19937 rng(49);
  const std::string alphabet = "abc";
  for (int table = 0; table < 40; ++table) {
    // A vocabulary of every string of 1 to 4 letters, and merges of random pairs that fit in 4 letters.
    json vocab = json::object();
    std::vector<std::string> strings = {""};
    for (std::size_t len = 1, begin = 0; len <= 4; ++len) {
      const std::size_t end = strings.size();
      for (std::size_t k = begin; k < end; ++k)
        for (char c : alphabet) strings.push_back(strings[k] + c);
      begin = end;
    }
    strings.erase(strings.begin());
    for (std::size_t i = 0; i < strings.size(); ++i) vocab[strings[i]] = static_cast<int>(i);
    std::map<std::pair<std::string, std::string>, int> ranks;
    json merges = json::array();
    for (int tries = 0; tries < 60; ++tries) {
      const std::string& a = strings[rng() % strings.size()];
      const std::string& b = strings[rng() % strings.size()];
      if (a.size() + b.size() > 4 || ranks.count({a, b})) continue;
      ranks[{a, b}] = static_cast<int>(merges.size());
      merges.push_back(json::array({a, b}));
    }
    const json tokenizer = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
    const BpeTokenizer tok = BpeTokenizer::from_json(tokenizer.dump(), "random/tokenizer.json");
    for (int w = 0; w < 200; ++w) {
      std::string word;
      std::vector<std::string> chars;
      for (std::size_t n = 1 + rng() % 40; n > 0; --n) chars.emplace_back(1, alphabet[rng() % 3]), word += chars.back();
      std::vector<int> want;
      for (const std::string& s : rescan_merge(chars, ranks)) want.push_back(vocab[s].get<int>());
      ASSERT_EQ(tok.encode(word), want) << "table " << table << ", word " << word;
    }
  }
}

TEST(BpeMerge, FuseUnkJoinsARunOfUnknownCharacters) {
  json j = {{"model",
             {{"type", "BPE"},
              {"vocab", {{"a", 0}, {"b", 1}, {"?", 2}}},
              {"merges", json::array()},
              {"unk_token", "?"}}}};
  EXPECT_EQ(BpeTokenizer::from_json(j.dump(), "t").encode("axyb z"), (std::vector<int>{0, 2, 2, 1, 2, 2}));
  j["model"]["fuse_unk"] = true;  // it was read as false: one unk per unknown code point
  EXPECT_EQ(BpeTokenizer::from_json(j.dump(), "t").encode("axyb z"), (std::vector<int>{0, 2, 1, 2}));
  EXPECT_EQ(BpeTokenizer::from_json(j.dump(), "t").encode("?x"), (std::vector<int>{2, 2}));  // a known "?" is not fused
}

TEST(BpeMerge, WorkOnALongWordIsBoundedPerSymbol) {
  // 120,000 symbols "ab ab ...": every pair (a, b) merges, then pairs of "ab" up to "abababab". The rescan
  // looked at every pair after each of ~105,000 merges (~6e9 lookups); the heap takes each pair once.
  const json model = {{"type", "BPE"},
                      {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}, {"abab", 3}, {"abababab", 4}}},
                      {"merges", json::array({"a b", "ab ab", "abab abab"})}};
  const text_detail::BpeModel m = text_detail::BpeModel::from_json(model, "t");
  std::vector<int> symbols;
  for (int i = 0; i < 60000; ++i) symbols.insert(symbols.end(), {0, 1});
  const std::size_t work = m.merge(symbols);
  EXPECT_LE(work, 3 * 120000u);
  EXPECT_EQ(symbols, std::vector<int>(15000, 4));
}

TEST(BpeMerge, QwenTokenizesA120KbWord) {
  // One word of 120 KB through the whole tokenizer (pre-tokenizer, NFC, byte-level, merges): it returns
  // within the ctest timeout (it took 35 s; the work is bounded above, never timed).
  const BpeTokenizer q = BpeTokenizer::load(dattn::testing::hv15_tokenizer_dir());
  std::string word;
  while (word.size() < 120000) word += "abcdefghij";
  const std::vector<int> ids = q.encode(word);
  EXPECT_FALSE(ids.empty());
  EXPECT_LE(ids.size(), word.size());
}

}  // namespace
