#pragma once
// Writes model weights as diffusers' save_pretrained does: one `STEM.safetensors`, or, when the total is
// above the shard limit, `STEM-0000i-of-0000n.safetensors` shards and `STEM.safetensors.index.json`
// ({"metadata": {"total_size": bytes}, "weight_map": {tensor: shard file}}). Tensors are produced one
// at a time by a callback and streamed to disk, so a checkpoint of any size needs memory for one tensor.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dattn/core/checked_math.h"
#include "dattn/core/tensor.h"

namespace dattn {

struct PlannedTensor {
  std::string name;
  DType dtype = DType::F32;  // F32, BF16, F16 or F64
  Shape shape;
  std::uint64_t bytes() const {  // overflow-checked (UserError)
    return static_cast<std::uint64_t>(
        checked_mul(shape_numel(shape), static_cast<std::int64_t>(dtype_size(dtype)), "checkpoint tensor size"));
  }
};

struct CheckpointWriteResult {
  std::vector<std::string> files;  // weight files written, in order (plus the index when sharded)
  std::uint64_t total_bytes = 0;   // tensor data, as the index's total_size
};

// Parses "5GB", "200KB", "10MB", "123" (bytes); units are powers of 1000 as in huggingface_hub
// ("GiB"/"MiB"/"KiB" are powers of 1024). Throws UserError naming `what` (the flag) and the text.
std::uint64_t parse_byte_size(const std::string& text, const std::string& what = "size");

// Shards are filled in order: a tensor that would push a shard past `max_shard_bytes` starts a new one
// (a tensor larger than the limit gets a shard of its own). `fill(i, dst)` writes tensor i's bytes
// (little-endian, row-major) into dst. Throws UserError naming the file on any I/O error.
CheckpointWriteResult write_diffusers_weights(const std::string& dir, const std::string& stem,
                                              const std::vector<PlannedTensor>& tensors, std::uint64_t max_shard_bytes,
                                              const std::function<void(std::size_t, std::uint8_t*)>& fill);

}  // namespace dattn
