// Writes what SafetensorsFile reads; it checks its input so that it can never write a file the reader
// rejects (tests craft malformed files by hand instead).
#include "dattn/io/safetensors_writer.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "dattn/core/error.h"
#include "dattn/io/output_file.h"
#include "dattn/io/safetensors.h"

namespace dattn {

namespace {

// The 8-byte header length and the JSON header, padded. With `check_given`, each tensor's bytes or data
// must be its shape's size.
std::string prefix_bytes(const std::string& path, const std::vector<WrittenTensor>& tensors,
                         const std::map<std::string, std::string>& metadata, bool check_given) {
  auto fail = [&](const std::string& name, const std::string& what) {
    throw UserError(path + ": " + (name.empty() ? "" : "tensor '" + name + "': ") + what);
  };
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  std::uint64_t offset = 0;
  for (const WrittenTensor& t : tensors) {
    if (t.name == "__metadata__") fail(t.name, "the name is reserved for metadata");
    if (!seen.insert(t.name).second) fail(t.name, "duplicate tensor name");
    const std::size_t esize = safetensors_dtype_size(t.dtype);
    if (esize == 0) fail(t.name, "unknown dtype '" + t.dtype + "'");
    std::uint64_t bytes = esize;
    for (std::int64_t d : t.shape) {
      if (d < 0) fail(t.name, "negative dimension " + std::to_string(d));
      if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes)) fail(t.name, "size overflows");
    }
    if (check_given) {
      if (t.data && !t.bytes.empty()) fail(t.name, "both a byte vector and a data pointer given");
      const std::size_t given = t.data ? t.size : t.bytes.size();
      if (bytes != given)
        fail(t.name, std::to_string(given) + " bytes given, the shape and dtype need " + std::to_string(bytes));
    }
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data section to 8 bytes
  const std::uint64_t n = text.size();            // little-endian host, as the reader asserts
  std::string out(reinterpret_cast<const char*>(&n), sizeof n);
  return out + text;
}

}  // namespace

std::string safetensors_prefix(const std::string& path, const std::vector<WrittenTensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  return prefix_bytes(path, tensors, metadata, /*check_given=*/false);
}

void write_safetensors(const std::string& path, const std::vector<WrittenTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string prefix = prefix_bytes(path, tensors, metadata, /*check_given=*/true);
  // Written under a temporary name and renamed when complete: an existing file is replaced whole.
  PendingFile file(path);
  std::ofstream out(file.temp(), std::ios::binary | std::ios::trunc);
  if (!out) throw UserError(path + ": cannot open for writing: " + std::strerror(errno));
  out.write(prefix.data(), static_cast<std::streamsize>(prefix.size()));
  for (const WrittenTensor& t : tensors) {
    const char* src = t.data ? static_cast<const char*>(t.data) : reinterpret_cast<const char*>(t.bytes.data());
    out.write(src, static_cast<std::streamsize>(t.data ? t.size : t.bytes.size()));
  }
  out.close();
  if (!out) throw UserError(path + ": write failed (disk full?)");
  file.commit();
}

}  // namespace dattn
