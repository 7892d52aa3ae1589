#include "text/nfc.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

namespace dattn::text_detail {

std::string nfc(std::string_view text) {
  if (text.empty()) return {};
  utf8proc_uint8_t* out = nullptr;
  // An explicit length (not NULLTERM) so that a NUL inside the text is kept like any other character.
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  if (n < 0) throw std::runtime_error(std::string("utf8proc NFC failed: ") + utf8proc_errmsg(n));
  return std::string(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
}

}  // namespace dattn::text_detail
