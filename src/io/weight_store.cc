#include "dattn/io/weight_store.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "dattn/core/parallel_copy.h"
#include "dattn/core/upload.h"
#include "dattn/io/json_object.h"

namespace dattn {
namespace fs = std::filesystem;
using json = nlohmann::json;

json read_component_config(const std::string& dir) {
  const fs::path path = fs::path(dir) / "config.json";
  refuse_special_file(path.string(), "model config");
  std::ifstream in(path);
  if (!in) throw UserError(path.string() + ": cannot open (is '" + dir + "' a diffusers model directory?)");
  in.close();
  return read_json_object(path.string(), "model config");
}

namespace {

bool uploads_read_the_file() {
  static const bool read = [] {
    const char* v = std::getenv("DATTN_UPLOAD_SOURCE");
    return !(v && std::string(v) == "map");
  }();
  return read;
}

std::optional<DType> storage_dtype(const std::string& name) {
  if (name == "F32") return DType::F32;
  if (name == "BF16") return DType::BF16;
  if (name == "F16") return DType::F16;
  if (name == "F64") return DType::F64;
  return std::nullopt;
}

// The shard files named by an index.json's weight_map, in first-seen order.
std::vector<std::string> shards_of_index(const fs::path& index_path) {
  require_regular_file(index_path.string(), "weights index");
  json index = read_json_object(index_path.string(), "weights index");
  if (!index.contains("weight_map") || !index["weight_map"].is_object())
    throw UserError(index_path.string() + ": expected a JSON object with a 'weight_map' object");
  std::vector<std::string> files;
  for (auto& [tensor, file] : index["weight_map"].items()) {
    if (!file.is_string())
      throw UserError(index_path.string() + ": weight_map['" + tensor + "'] is not a file name");
    // A shard is a file of this folder, as diffusers writes them: a name with a folder part ("../x", "/x",
    // "a/b") would read a file outside it. (The file itself may be a link: the Hugging Face cache's are.)
    const std::string name = file.get<std::string>();
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
      throw UserError(index_path.string() + ": weight_map['" + tensor + "'] is '" + name +
                      "'; expected the name of a shard file in the index's own folder");
    const std::string path = (index_path.parent_path() / name).string();
    if (std::find(files.begin(), files.end(), path) == files.end()) files.push_back(path);
  }
  for (const auto& f : files) {
    std::error_code ec;
    if (!fs::is_regular_file(f, ec))
      throw UserError(index_path.string() + ": shard '" + f + "' does not exist or is not a file" +
                      unusual_path_error(ec));
  }
  return files;
}

}  // namespace

WeightStore::WeightStore(const std::string& dir) {
  // The error_code forms: a link loop or a name too long is the user's folder, not dattn's failure.
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw UserError("'" + dir + "' is not a directory" + unusual_path_error(ec));
  std::vector<fs::path> indexes, singles;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".safetensors.index.json")) indexes.push_back(e.path());
    else if (name.ends_with(".safetensors")) singles.push_back(e.path());
  }
  std::vector<std::string> files;
  if (indexes.size() > 1)
    throw UserError("'" + dir + "' has " + std::to_string(indexes.size()) +
                    " *.safetensors.index.json files; expected one");
  if (indexes.size() == 1) {
    files = shards_of_index(indexes[0]);
  } else if (singles.size() == 1) {
    files.push_back(singles[0].string());
  } else {
    throw UserError("'" + dir + "' has " + std::to_string(singles.size()) +
                    " *.safetensors files and no index; expected exactly one weights file or an index");
  }
  *this = WeightStore(files);
  source_ = dir;
}

WeightStore::WeightStore(const std::vector<std::string>& files) {
  for (std::size_t i = 0; i < files.size(); ++i) {
    files_.push_back(std::make_shared<const SafetensorsFile>(files[i]));
    for (const auto& [name, info] : files_.back()->tensors()) {
      (void)info;
      index_.emplace_back(name, i);
    }
  }
  std::sort(index_.begin(), index_.end());
  for (std::size_t i = 1; i < index_.size(); ++i)
    if (index_[i].first == index_[i - 1].first)
      throw UserError("tensor '" + index_[i].first + "' is in both " + files_[index_[i - 1].second]->path() +
                      " and " + files_[index_[i].second]->path());
  source_ = files.size() == 1 ? files[0] : std::to_string(files.size()) + " files";
}

bool WeightStore::contains(const std::string& name) const {
  auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(name, std::size_t{0}));
  return it != index_.end() && it->first == name;
}

const SafetensorsFile& WeightStore::file_of(const std::string& name) const {
  auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(name, std::size_t{0}));
  if (it == index_.end() || it->first != name)
    throw UserError(source_ + ": tensor '" + name + "' not found (a checkpoint for another model or config?)");
  return *files_[it->second];
}

const TensorInfo& WeightStore::info(const std::string& name) const { return file_of(name).info(name); }

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  for (const auto& [n, i] : index_) out.push_back(n);
  return out;
}

Tensor tensor_from_safetensors(const SafetensorsFile& file, const std::string& name, DType dtype) {
  const TensorInfo& info = file.info(name);
  auto src = storage_dtype(info.dtype);
  if (!src)
    throw UserError(file.path() + ": tensor '" + name + "' has dtype " + info.dtype +
                    "; expected F32, BF16, F16 or F64");
  Tensor view = Tensor::wrap_host(file.data(name), info.shape, *src);
  if (*src != dtype) return view.to(dtype);
  Tensor copy = Tensor::empty(info.shape, dtype);  // view.clone(), over the cores (a 2 GB embedding)
  parallel_copy(copy.data(), view.data(), view.bytes());
  return copy;
}

namespace {

// The tensor's entry, its shape checked against `expected_shape` when that is not empty.
const TensorInfo& checked_info(const SafetensorsFile& file, const std::string& name, const Shape& expected_shape) {
  const TensorInfo& info = file.info(name);
  if (!expected_shape.empty() && info.shape != expected_shape)
    throw UserError(file.path() + ": tensor '" + name + "' has shape " + shape_str(info.shape) +
                    ", expected " + shape_str(expected_shape));
  return info;
}

}  // namespace

Tensor WeightStore::take(const std::string& name, DType dtype, Device device, const Shape& expected_shape) {
  const SafetensorsFile& file = file_of(name);
  const TensorInfo& info = checked_info(file, name, expected_shape);
  used_.insert(name);
  const auto stored = storage_dtype(info.dtype);
  // CUDA: the stored bytes through the context's pinned staging (upload.h), read from the file with pread
  // (no page faults of the mapping: bench/results/2026-12-03-h200-loads-pread.md; DATTN_UPLOAD_SOURCE=map
  // copies from the mapping instead), converted on the GPU when the dtype changes. Queued, not waited
  // for: the tensor's later users on the context's stream are ordered after its copies.
  if (device == Device::CUDA && stored) {
    if (uploads_read_the_file() && (*stored == dtype || converts_on_device(*stored, dtype)))
      return upload_tensor_from_file(file.fd(), file.file_offset(name), info.shape, *stored, dtype, file.path().c_str());
    return upload_tensor(Tensor::wrap_host(file.data(name), info.shape, *stored), dtype);
  }
  return tensor_from_safetensors(file, name, dtype).to(device);  // CPU, or throws the dtype error
}

namespace {

// `slice` of the stored tensor `view` (a host view in its file's dtype), copied into a new host tensor:
// one contiguous run of `length` entries per index of the dimensions before `dim`.
Tensor copy_slice(const Tensor& view, const TensorSlice& slice) {
  const Shape& shape = view.shape();
  std::size_t outer = 1, inner = dtype_size(view.dtype());
  for (int i = 0; i < slice.dim; ++i) outer *= static_cast<std::size_t>(shape[i]);
  for (std::size_t i = static_cast<std::size_t>(slice.dim) + 1; i < shape.size(); ++i)
    inner *= static_cast<std::size_t>(shape[i]);
  Shape part = shape;
  part[static_cast<std::size_t>(slice.dim)] = slice.length;
  Tensor out = Tensor::empty(part, view.dtype());
  const std::size_t run = static_cast<std::size_t>(slice.length) * inner;
  const std::size_t stride = static_cast<std::size_t>(shape[static_cast<std::size_t>(slice.dim)]) * inner;
  const char* src = static_cast<const char*>(view.data()) + static_cast<std::size_t>(slice.start) * inner;
  char* dst = static_cast<char*>(out.data());
  for (std::size_t o = 0; o < outer; ++o) std::memcpy(dst + o * run, src + o * stride, run);
  return out;
}

}  // namespace

Tensor WeightStore::take(const std::string& name, DType dtype, Device device, const Shape& expected_shape,
                         const TensorSlice& slice) {
  const SafetensorsFile& file = file_of(name);
  const TensorInfo& info = checked_info(file, name, expected_shape);
  const auto ndim = static_cast<int>(info.shape.size());
  if (slice.dim < 0 || slice.dim >= ndim || slice.start < 0 || slice.length < 1 ||
      slice.start + slice.length > info.shape[static_cast<std::size_t>(slice.dim)])
    throw UserError(file.path() + ": tensor '" + name + "' " + shape_str(info.shape) + ": cannot take entries [" +
                    std::to_string(slice.start) + ", " + std::to_string(slice.start + slice.length) +
                    ") of dimension " + std::to_string(slice.dim) + "; expected a slice inside the tensor");
  const auto stored = storage_dtype(info.dtype);
  if (!stored) return tensor_from_safetensors(file, name, dtype);  // throws the dtype error
  used_.insert(name);
  const Tensor part = copy_slice(Tensor::wrap_host(file.data(name), info.shape, *stored), slice);
  if (device == Device::CUDA) return upload_tensor(part, dtype);  // as take(): converted on the GPU
  return part.dtype() == dtype ? part : part.to(dtype);
}

Tensor WeightStore::host_view(const std::string& name, const Shape& expected_shape) {
  const SafetensorsFile& file = file_of(name);
  const TensorInfo& info = checked_info(file, name, expected_shape);
  used_.insert(name);
  // tensor_from_safetensors's checks (dtype) without its copy: the stored dtype is kept.
  const auto dtype = storage_dtype(info.dtype);
  if (!dtype) return tensor_from_safetensors(file, name, DType::F32);  // throws the dtype error
  return Tensor::wrap_host(file.data(name), info.shape, *dtype);
}

Tensor WeightStore::take_mapped(const std::string& name, DType dtype, const Shape& expected_shape) {
  const SafetensorsFile& file = file_of(name);
  const TensorInfo& info = checked_info(file, name, expected_shape);
  const auto stored = storage_dtype(info.dtype);
  if (!stored || *stored != dtype) return take(name, dtype, Device::CPU, expected_shape);
  used_.insert(name);
  const auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(name, std::size_t{0}));
  return Tensor::wrap_host(file.data(name), info.shape, dtype, files_[it->second]);
}

std::vector<std::string> WeightStore::unused() const {
  std::vector<std::string> out;
  for (const auto& [n, i] : index_)
    if (!used_.count(n)) out.push_back(n);
  return out;
}

void WeightStore::require_all_used() const {
  auto rest = unused();
  if (rest.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < rest.size() && i < 10; ++i) list += (i ? ", " : "") + rest[i];
  if (rest.size() > 10) list += ", ...";
  throw UserError(source_ + ": " + std::to_string(rest.size()) +
                  " tensors the model does not use (a checkpoint for another architecture or config?): " + list);
}

}  // namespace dattn
