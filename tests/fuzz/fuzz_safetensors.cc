// Fuzzes the safetensors reader: any file either opens with a header whose every tensor lies inside the
// file (and then reads) or is refused with a UserError. Anything else (a crash, a sanitizer report, an
// exception of another type) is a finding.
#include <cstddef>
#include <cstdint>

#include "dattn/core/error.h"
#include "dattn/io/safetensors.h"
#include "fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = dattn::fuzz::write_input("safetensors", data, size);
  try {
    dattn::SafetensorsFile file(path);
    for (const auto& [name, info] : file.tensors()) {
      if (info.numel() > (1 << 16)) continue;  // reading is checked, not the time it takes
      try {
        (void)file.read_f64(name);
      } catch (const dattn::UserError&) {  // dtypes read_f64 does not convert
      }
    }
  } catch (const dattn::UserError&) {
  }
  return 0;
}
