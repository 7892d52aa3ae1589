// The --shape option (see shape_option.h).
#include "dattn/shape_option.h"

#include <cstdint>
#include <limits>
#include <sstream>
#include <string_view>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/core/whole_number.h"
#include "dattn/models/attention_roles.h"

namespace dattn::tool {

AttentionShape shape_from_option(const std::string& text) {
  std::vector<std::int64_t> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // Decimal digits only, as every integer flag (integer_text.h): stoll took " 5" and "+5". A '-' is
    // read so that validate() names the dimension that is negative.
    const bool negative = !item.empty() && item[0] == '-';
    const auto value = parse_whole_number(std::string_view(item).substr(negative ? 1 : 0),
                                          std::numeric_limits<std::int64_t>::max());
    if (!value)
      throw UserError("--shape '" + text + "': '" + item + "' is not an integer in decimal digits; expected B,Sq,Sk,H,D");
    v.push_back(negative ? -static_cast<std::int64_t>(*value) : static_cast<std::int64_t>(*value));
  }
  if (v.size() != 5) throw UserError("--shape '" + text + "': expected 5 integers B,Sq,Sk,H,D");
  AttentionShape s;
  s.batch = v[0], s.seq_q = v[1], s.seq_k = v[2], s.heads_q = v[3], s.head_dim = v[4];
  s.heads_kv = s.heads_q;
  return s;
}

DType default_dtype(Device device) { return device == Device::CUDA ? DType::BF16 : DType::F32; }

AttentionShape nominal_shape_option(const std::string& text, Device device) {
  if (text.empty()) return reference_attention_shape(default_dtype(device));
  AttentionShape s = shape_from_option(text);
  s.dtype = default_dtype(device);
  s.validate();
  return s;
}

}  // namespace dattn::tool
