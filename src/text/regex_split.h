#pragma once
// A compiled PCRE2 pattern in UTF + UCP mode (\s, \p{L}, \w with Unicode meanings, as the Oniguruma
// regexes of Hugging Face tokenizers have them) and the spans it matches in a text.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dattn::text_detail {

class Regex {
 public:
  // `literal`: the pattern is a plain string (tokenizer.json's {"String": ...}). Throws UserError naming
  // `source` and the PCRE2 message when the pattern does not compile.
  Regex(const std::string& pattern, bool literal, const std::string& source);
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // Non-overlapping matches [begin, end) in byte offsets, left to right; empty matches are skipped.
  // `text` must be valid UTF-8.
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dattn::text_detail
