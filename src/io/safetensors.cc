// Safetensors reader: 8-byte little-endian header length N, N bytes of JSON, then the data section.
// The whole file is mapped read-only; the header is validated completely before any tensor is used, so
// later accessors can trust every range.
#include "dattn/io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "dattn/core/checked_math.h"
#include "dattn/core/edit_distance.h"
#include "dattn/core/error.h"
#include "dattn/core/files.h"

// The format is little-endian and so are all the hosts we read it on; values are loaded raw.
static_assert(std::endian::native == std::endian::little, "dattn's safetensors reader needs a little-endian host");

namespace dattn {
namespace {

using json = nlohmann::json;

constexpr std::uint64_t kMaxHeader = 100ull * 1000 * 1000;  // same limit as the reference implementation
constexpr int kMaxHeaderDepth = 16;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw UserError(path + ": " + what);
}
[[noreturn]] void fail_tensor(const std::string& path, const std::string& name, const std::string& what) {
  fail(path, "tensor '" + name + "': " + what);
}

// Messages must stay on one line, whatever the file contains.
std::string one_line(std::string s) {
  std::replace_if(s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return s;
}

// JSON values that are non-negative integers (not floats, not negative), as uint64.
bool as_u64(const json& v, std::uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<std::uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
    out = static_cast<std::uint64_t>(v.get<std::int64_t>());
    return true;
  }
  return false;
}

template <class T>
T load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // the data section need not be aligned
  return v;
}

// Parses the header, recording the first duplicate key: nlohmann::json would silently keep the last.
json parse_header(const std::string& path, const char* first, const char* last) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string top_key, dup_key, dup_tensor;
  bool dup = false;
  auto cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    // A real header nests 3 levels (tensor -> entry -> shape); deeper nesting can only be hostile, and
    // printing it in a message would recurse once per level.
    if ((ev == json::parse_event_t::object_start || ev == json::parse_event_t::array_start) && depth >= kMaxHeaderDepth)
      fail(path, "header nests deeper than " + std::to_string(kMaxHeaderDepth) + " levels");
    if (ev == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (ev == json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (ev == json::parse_event_t::key && !keys.empty()) {
      const std::string k = parsed.get<std::string>();
      if (depth == 1) top_key = k;
      if (!keys.back().insert(k).second && !dup) {
        dup = true;
        dup_key = k;
        dup_tensor = depth == 1 ? std::string() : top_key;
      }
    }
    return true;
  };
  json header;
  try {
    header = json::parse(first, last, cb);
  } catch (const json::exception& e) {
    fail(path, "header is not valid JSON: " + one_line(e.what()));
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  if (dup && dup_tensor.empty()) fail_tensor(path, dup_key, "duplicate tensor name in the header");
  if (dup) fail_tensor(path, dup_tensor, "duplicate key '" + dup_key + "'");
  return header;
}

TensorInfo parse_entry(const std::string& path, const std::string& name, const json& e) {
  if (!e.is_object()) fail_tensor(path, name, "entry is not a JSON object");
  for (const char* k : {"dtype", "shape", "data_offsets"})
    if (!e.contains(k)) fail_tensor(path, name, std::string("missing '") + k + "'");
  for (const auto& [k, v] : e.items())
    if (k != "dtype" && k != "shape" && k != "data_offsets")
      fail_tensor(path, name, "unexpected key '" + k + "' (only dtype, shape and data_offsets are allowed)");

  TensorInfo t;
  t.name = name;
  if (!e["dtype"].is_string()) fail_tensor(path, name, "dtype is not a string");
  t.dtype = e["dtype"].get<std::string>();
  const std::size_t esize = safetensors_dtype_size(t.dtype);
  if (esize == 0) fail_tensor(path, name, "unknown dtype '" + t.dtype + "'");

  const json& shape = e["shape"];
  if (!shape.is_array()) fail_tensor(path, name, "shape is not an array");
  std::uint64_t bytes = esize;
  bool overflow = false;
  for (const json& d : shape) {
    std::uint64_t n = 0;
    if (!as_u64(d, n) || n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail_tensor(path, name, "shape " + one_line(shape.dump()) + " has an entry that is not a non-negative integer");
    t.shape.push_back(static_cast<std::int64_t>(n));
    overflow = overflow || __builtin_mul_overflow(bytes, n, &bytes);
  }
  // A zero dimension makes the size 0 however large the others are.
  if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) overflow = false, bytes = 0;
  if (overflow) fail_tensor(path, name, "shape " + one_line(shape.dump()) + " is too large (size overflows)");

  const json& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !as_u64(off[0], t.begin) || !as_u64(off[1], t.end))
    fail_tensor(path, name, "data_offsets must be [begin, end], two non-negative integers");
  if (t.begin > t.end)
    fail_tensor(path, name, "data_offsets begin " + std::to_string(t.begin) + " is after end " + std::to_string(t.end));
  if (t.end - t.begin != bytes)
    fail_tensor(path, name, "data_offsets cover " + std::to_string(t.end - t.begin) + " bytes but dtype " + t.dtype +
                                " and shape " + one_line(shape.dump()) + " need " + std::to_string(bytes));
  return t;
}

}  // namespace

std::size_t safetensors_dtype_size(std::string_view d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL" || d == "F8_E4M3" || d == "F8_E5M2") return 1;
  return 0;
}

std::int64_t TensorInfo::numel() const {
  // The header check already bounded the byte size; a hand-built TensorInfo is checked here too.
  if (const auto n = product_if_fits(shape)) return *n;
  throw UserError("tensor '" + name + "': shape has more than 2^63 elements");
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  // stat first: open() of a FIFO blocks until a writer comes, forever. O_NONBLOCK covers a path that
  // changes between the two; it means nothing for the regular file read below.
  refuse_special_file(path, "safetensors file");  // a missing file is open()'s error below
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ < 8) {
    ::close(fd);
    fail(path, "file is " + std::to_string(size_) + " bytes, shorter than the 8-byte header length");
  }
  void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  if (m == MAP_FAILED) {
    ::close(fd);
    fail(path, std::string("cannot mmap: ") + std::strerror(map_errno));
  }
  map_ = static_cast<const std::uint8_t*>(m);
  fd_ = fd;  // kept for pread (fd()): uploads read the file instead of faulting the mapping in

  // From here on a throw must unmap: the destructor does not run for a half-built object.
  try {
    const std::uint64_t n = load<std::uint64_t>(map_);
    if (n == 0) fail(path, "header length is 0");
    if (n > kMaxHeader) fail(path, "header length " + std::to_string(n) + " exceeds the 100 MB limit");
    if (n > size_ - 8)
      fail(path, "header length " + std::to_string(n) + " is larger than the file (" + std::to_string(size_) + " bytes)");
    const char* h = reinterpret_cast<const char*>(map_ + 8);
    json header = parse_header(path, h, h + n);
    data_ = map_ + 8 + n;
    const std::uint64_t data_size = size_ - 8 - n;

    for (auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        if (!entry.is_object()) fail(path, "__metadata__ is not a JSON object");
        for (auto& [k, v] : entry.items()) {
          if (!v.is_string()) fail(path, "__metadata__ value for '" + k + "' is not a string");
          metadata_[k] = v.get<std::string>();
        }
        continue;
      }
      TensorInfo t = parse_entry(path, name, entry);
      if (t.end > data_size)
        fail_tensor(path, name, "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                                    "] run past the data section (" + std::to_string(data_size) + " bytes)");
      tensors_.emplace(name, std::move(t));
    }

    // Overlap check on the sorted ranges; empty tensors hold no bytes and cannot overlap.
    std::vector<const TensorInfo*> order;
    for (const auto& [name, t] : tensors_)
      if (t.end > t.begin) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) {
      return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    for (std::size_t i = 1; i < order.size(); ++i)
      if (order[i]->begin < order[i - 1]->end)
        fail(path, "tensors '" + order[i - 1]->name + "' and '" + order[i]->name + "' have overlapping data_offsets");
  } catch (...) {
    ::munmap(const_cast<std::uint8_t*>(map_), size_);
    ::close(fd_);
    map_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(const_cast<std::uint8_t*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  // Suggest the closest names: typos and wrong block indices are the usual cause.
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const auto& [other, t] : tensors_) near.emplace_back(edit_distance(name, other), other);
  std::sort(near.begin(), near.end());
  std::string msg = "no such tensor (the file has " + std::to_string(tensors_.size()) + ")";
  const std::size_t limit = std::max<std::size_t>(3, name.size() / 3);
  std::string hint;
  for (std::size_t i = 0; i < near.size() && i < 3 && near[i].first <= limit; ++i)
    hint += (hint.empty() ? "" : ", ") + ("'" + near[i].second + "'");
  if (!hint.empty()) msg += "; did you mean " + hint + "?";
  fail_tensor(path_, name, one_line(msg));
}

const std::uint8_t* SafetensorsFile::data(const std::string& name) const { return data_ + info(name).begin; }

std::vector<double> SafetensorsFile::read_f64(const std::string& name) const {
  const TensorInfo& t = info(name);
  const std::uint8_t* p = data_ + t.begin;
  const std::size_t n = static_cast<std::size_t>(t.numel());
  std::vector<double> out(n);
  const std::string& d = t.dtype;
  auto each = [&]<class T>(auto convert) {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<double>(convert(load<T>(p + i * sizeof(T))));
  };
  auto same = [](auto v) { return v; };
  if (d == "F64") each.operator()<double>(same);
  else if (d == "F32") each.operator()<float>(same);
  else if (d == "F16") each.operator()<std::uint16_t>(f16_to_f32);
  else if (d == "BF16") each.operator()<std::uint16_t>(bf16_to_f32);
  else if (d == "F8_E4M3") each.operator()<std::uint8_t>(e4m3_to_f32);
  else if (d == "F8_E5M2") each.operator()<std::uint8_t>(e5m2_to_f32);
  else if (d == "I64") each.operator()<std::int64_t>(same);
  else if (d == "I32") each.operator()<std::int32_t>(same);
  else if (d == "I16") each.operator()<std::int16_t>(same);
  else if (d == "I8") each.operator()<std::int8_t>(same);
  else if (d == "U64") each.operator()<std::uint64_t>(same);
  else if (d == "U32") each.operator()<std::uint32_t>(same);
  else if (d == "U16") each.operator()<std::uint16_t>(same);
  else if (d == "U8") each.operator()<std::uint8_t>(same);
  else if (d == "BOOL") each.operator()<std::uint8_t>([](std::uint8_t v) { return v != 0 ? 1.0 : 0.0; });
  else fail_tensor(path_, name, "dtype " + d + " cannot be read as numbers");
  return out;
}

}  // namespace dattn
