#pragma once
// Lookup in the table of named HTML character references (html_entities.cc).
#include <optional>
#include <string_view>

namespace dattn::text_detail {

// The code point of `name` ("amp;", or "amp" for the legacy names valid without ';'); nullopt if unknown.
std::optional<char32_t> find_html_entity(std::string_view name);

}  // namespace dattn::text_detail
