// Sharded, streamed safetensors checkpoints in diffusers' layout (see checkpoint_writer.h).
#include "dattn/io/checkpoint_writer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>

#include <nlohmann/json.hpp>

#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "dattn/core/human_bytes.h"

namespace dattn {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::uint64_t parse_byte_size(const std::string& text, const std::string& what) {
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  std::string unit = text.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::pair<const char*, std::uint64_t> units[] = {
      {"", 1},          {"B", 1},           {"KB", 1000},        {"MB", 1000000},  {"GB", 1000000000},
      {"KIB", 1 << 10}, {"MIB", 1 << 20},   {"GIB", 1ULL << 30}, {"TB", 1000000000000ULL}};
  for (const auto& [name, scale] : units)
    if (i > 0 && i <= 15 && unit == name) {
      const std::uint64_t value = std::stoull(text.substr(0, i));
      if (value <= UINT64_MAX / scale) return value * scale;
    }
  throw UserError(what + " '" + text +
                  "': expected a whole number with an optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB), e.g. 5GB");
}

namespace {

std::string safetensors_dtype(DType d) {
  switch (d) {
    case DType::F32: return "F32";
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
    case DType::F64: return "F64";
    default: throw UserError("checkpoint writer: dtype " + std::string(dtype_name(d)) + " is not a weight dtype");
  }
}

std::string shard_name(const std::string& stem, std::size_t i, std::size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "-%05zu-of-%05zu.safetensors", i + 1, n);
  return stem + buf;
}

void write_file(const fs::path& path, const std::vector<PlannedTensor>& tensors, std::size_t first, std::size_t last,
                const std::function<void(std::size_t, std::uint8_t*)>& fill) {
  json header = json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::uint64_t offset = 0;
  for (std::size_t i = first; i < last; ++i) {
    const auto& t = tensors[i];
    header[t.name] = {{"dtype", safetensors_dtype(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  // Written under a temporary name and renamed when complete, so a failure never leaves a file with
  // the final name that a loader would take for a checkpoint.
  const fs::path partial = fs::path(path.string() + ".partial");
  std::ofstream out(partial, std::ios::binary | std::ios::trunc);
  if (!out) throw UserError(path.string() + ": cannot open for writing: " + std::strerror(errno));
  struct RemoveUnlessDone {
    const fs::path& p;
    bool done = false;
    ~RemoveUnlessDone() {
      std::error_code ec;
      if (!done) fs::remove(p, ec);
    }
  } cleanup{partial};
  const std::uint64_t n = text.size();
  out.write(reinterpret_cast<const char*>(&n), sizeof n);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  // Tensor i is written on another thread while tensor i + 1 is filled (on every core for random weights),
  // so the write is hidden behind the fill instead of adding to it; two buffers take turns.
  std::uint64_t largest = 0;
  for (std::size_t i = first; i < last; ++i) largest = std::max(largest, tensors[i].bytes());
  std::unique_ptr<std::uint8_t[]> bufs[2] = {std::unique_ptr<std::uint8_t[]>(new std::uint8_t[largest]),
                                             std::unique_ptr<std::uint8_t[]>(new std::uint8_t[largest])};
  std::future<void> writing;  // after bufs: destroyed first, it waits for the write still using one
  for (std::size_t i = first; i < last; ++i) {
    std::uint8_t* buf = bufs[(i - first) % 2].get();
    fill(i, buf);
    if (writing.valid()) writing.get();
    if (!out) break;
    writing = std::async(std::launch::async, [&out, buf, bytes = tensors[i].bytes()] {
      out.write(reinterpret_cast<const char*>(buf), static_cast<std::streamsize>(bytes));
    });
  }
  if (writing.valid()) writing.get();
  out.close();
  if (!out) throw UserError(path.string() + ": write failed (disk full?)");
  std::error_code ec;
  fs::rename(partial, path, ec);
  if (ec) throw UserError(path.string() + ": cannot rename from " + partial.filename().string() + ": " + ec.message());
  cleanup.done = true;
}

// Refuses a checkpoint the disk cannot hold before any byte is written (a 2 TB config would fill it).
void check_disk_space(const std::string& dir, std::uint64_t tensor_bytes, std::size_t tensors) {
  const std::int64_t free = free_disk_bytes(dir);
  // Headers: a few hundred bytes of JSON per tensor name, shape and offsets, counted generously.
  const std::uint64_t need = tensor_bytes + 512ull * tensors + (1u << 20);
  if (free >= 0 && need > static_cast<std::uint64_t>(free))
    throw UserError("'" + dir + "': the checkpoint needs " + human_bytes(static_cast<std::int64_t>(
                        std::min<std::uint64_t>(need, INT64_MAX))) + " but the disk has " + human_bytes(free) +
                    " free; choose a smaller config or another --out");
}

}  // namespace

CheckpointWriteResult write_diffusers_weights(const std::string& dir, const std::string& stem,
                                              const std::vector<PlannedTensor>& tensors, std::uint64_t max_shard_bytes,
                                              const std::function<void(std::size_t, std::uint8_t*)>& fill) {
  // Shard boundaries: [starts[k], starts[k + 1]).
  std::vector<std::size_t> starts = {0};
  std::uint64_t in_shard = 0, total = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::uint64_t b = tensors[i].bytes();
    if (in_shard > 0 && in_shard + b > max_shard_bytes) {
      starts.push_back(i);
      in_shard = 0;
    }
    in_shard += b;
    if (__builtin_add_overflow(total, b, &total)) throw UserError("'" + dir + "': the checkpoint's size overflows");
  }
  starts.push_back(tensors.size());
  check_disk_space(dir, total, tensors.size());
  const std::size_t shards = starts.size() - 1;
  CheckpointWriteResult result;
  result.total_bytes = total;
  if (shards == 1) {
    const fs::path path = fs::path(dir) / (stem + ".safetensors");
    write_file(path, tensors, 0, tensors.size(), fill);
    result.files.push_back(path.string());
    return result;
  }
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", json::object()}};
  for (std::size_t k = 0; k < shards; ++k) {
    const std::string name = shard_name(stem, k, shards);
    write_file(fs::path(dir) / name, tensors, starts[k], starts[k + 1], fill);
    for (std::size_t i = starts[k]; i < starts[k + 1]; ++i) index["weight_map"][tensors[i].name] = name;
    result.files.push_back((fs::path(dir) / name).string());
  }
  const fs::path index_path = fs::path(dir) / (stem + ".safetensors.index.json");
  std::ofstream out(index_path);
  out << index.dump(2) << "\n";
  out.close();
  if (!out) throw UserError(index_path.string() + ": write failed");
  result.files.push_back(index_path.string());
  return result;
}

}  // namespace dattn
