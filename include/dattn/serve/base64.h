#pragma once
// Base64 (RFC 4648, with padding) for the images API's b64_json.
#include <string>
#include <string_view>

namespace dattn::serve {

std::string base64_encode(std::string_view bytes);

}  // namespace dattn::serve
