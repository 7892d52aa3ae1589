#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/regex_split.h"

#include <pcre2.h>

#include <cstdint>
#include <stdexcept>

#include "dattn/core/error.h"

namespace dattn::text_detail {

struct Regex::Impl {
  pcre2_code* code = nullptr;
  ~Impl() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

Regex::Regex(const std::string& pattern, bool literal, const std::string& source) : impl_(std::make_unique<Impl>()) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  // PCRE2 refuses UCP with LITERAL ("invalid option bits"), and a literal has no classes for it to change:
  // every Split with a {"String": ...} pattern was refused.
  const std::uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  impl_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err, &offset, nullptr);
  if (!impl_->code)
    throw UserError(source + ": the regex \"" + pattern + "\" does not compile at offset " + std::to_string(offset) +
                    ": " + pcre2_message(err));
}

Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

std::vector<std::pair<std::size_t, std::size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), &pcre2_match_data_free);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t pos = 0;
  std::uint32_t flags = 0;  // the text was validated once; later calls skip PCRE2's own UTF check
  while (pos <= text.size()) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), pos, flags, md.get(), nullptr);
    flags = PCRE2_NO_UTF_CHECK;
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw std::runtime_error("PCRE2 match failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const std::size_t begin = ov[0], end = ov[1];
    if (end > begin) {
      spans.emplace_back(begin, end);
      pos = end;
    } else {  // an empty match: step over one code point
      if (begin >= text.size()) break;
      pos = begin + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
    }
  }
  return spans;
}

}  // namespace dattn::text_detail
