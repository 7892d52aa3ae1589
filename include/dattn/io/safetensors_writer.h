#pragma once
// A small safetensors writer for tests and tools: the tensors are written in the order given, back to
// back, after a JSON header padded with spaces to a multiple of 8 bytes (so the data section is aligned).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dattn {

struct WrittenTensor {
  std::string name;
  std::string dtype;  // safetensors name: F64, F32, BF16, F16, I64, I32, I8, U8, BOOL, F8_E4M3...
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;  // little-endian, row-major; size must be numel * element size
  // Or bytes held elsewhere, written without a copy (a 580 MB video): `data` set and `bytes` left empty.
  // They must stay valid during the call.
  const void* data = nullptr;
  std::size_t size = 0;
};

// The file is written under a temporary name and renamed over `path` when complete (output_file.h), so
// an existing file is replaced whole or left as it was. Throws UserError naming the path (and the
// tensor) for an unknown dtype, a size that does not match the shape, a duplicate or reserved name, or a
// file that cannot be written.
void write_safetensors(const std::string& path, const std::vector<WrittenTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// The bytes before the data section of that file (header length and header), the sizes taken from the
// shapes (`bytes` and `data` are not read): for a writer that streams the tensors' data after them, in
// the order given (a video written as its frames are decoded). Same UserErrors otherwise.
std::string safetensors_prefix(const std::string& path, const std::vector<WrittenTensor>& tensors,
                               const std::map<std::string, std::string>& metadata = {});

}  // namespace dattn
