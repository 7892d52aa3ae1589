#pragma once
// The HunyuanVideo-1.5 tokenizer case (hv15_tiny/cases/tokenizer.{json,safetensors}) and its folders.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dattn/io/safetensors.h"
#include "dattn/text/tokenizer.h"
#include "support/golden_dir.h"

namespace dattn::testing {

inline std::string hv15_dir() { return golden_dir() + "/hv15_tiny"; }
inline std::string hv15_tokenizer_dir() { return hv15_dir() + "/pipeline/tokenizer"; }
inline std::string hv15_tokenizer_2_dir() { return hv15_dir() + "/pipeline/tokenizer_2"; }

inline nlohmann::json hv15_tokenizer_case() {
  const std::string path = hv15_dir() + "/cases/tokenizer.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return nlohmann::json::parse(in);
}

inline std::vector<std::int64_t> golden_i64(const SafetensorsFile& f, const std::string& name) {
  const std::vector<double> v = f.read_f64(name);
  return std::vector<std::int64_t>(v.begin(), v.end());
}

// Row `b` of `ids`/`mask` [rows, length] against `got` row `got_row`; a failure names the prompt and the
// first differing position.
inline void expect_row(const TokenizedBatch& got, std::int64_t got_row, const std::vector<std::int64_t>& ids,
                       const std::vector<std::int64_t>& mask, std::int64_t b, const std::string& what) {
  for (std::int64_t i = 0; i < got.length; ++i) {
    const auto g = static_cast<std::size_t>(got_row * got.length + i), w = static_cast<std::size_t>(b * got.length + i);
    if (got.input_ids[g] != ids[w] || got.attention_mask[g] != mask[w]) {
      ADD_FAILURE() << what << ": prompt " << b << " differs first at position " << i << ": id " << got.input_ids[g]
                    << " vs " << ids[w] << ", mask " << got.attention_mask[g] << " vs " << mask[w];
      return;
    }
  }
}

}  // namespace dattn::testing
