#pragma once
// A memory-mapped safetensors file. The header is validated strictly when the file is opened: length,
// JSON, dtype names, shapes against byte ranges, ranges inside the file and not overlapping, and no
// duplicate names. Every error names the file (and the tensor).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dattn/core/dtype.h"

namespace dattn {

// Bytes per element of a safetensors dtype name (F64, BF16, F8_E4M3...); 0 when the name is unknown.
std::size_t safetensors_dtype_size(std::string_view dtype);

struct TensorInfo {
  std::string name;
  std::string dtype;  // as written: F64, F32, BF16, F16, I64, I32, I8, U8, BOOL, F8_E4M3, F8_E5M2...
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // byte range inside the data section
  std::int64_t numel() const;
};

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);  // throws UserError
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;  // throws UserError naming file and tensor
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::uint8_t* data(const std::string& name) const;
  // The file, open for reading for as long as this object lives, and where a tensor's bytes start in
  // it: for readers that copy with pread instead of touching the mapping (core/upload.h).
  int fd() const { return fd_; }
  std::uint64_t file_offset(const std::string& name) const {
    return static_cast<std::uint64_t>(data(name) - map_);
  }
  // The tensor's values converted to double (float and integer dtypes); throws for other dtypes.
  std::vector<double> read_f64(const std::string& name) const;

 private:
  std::string path_;
  const std::uint8_t* map_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
  const std::uint8_t* data_ = nullptr;  // start of the data section
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace dattn
