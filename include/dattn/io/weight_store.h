#pragma once
// The weights of one diffusers component directory (transformer/, vae/, text_encoder/): a single
// `*.safetensors` file or a sharded checkpoint described by `*.safetensors.index.json`. Tensors are
// memory-mapped and converted to the run dtype and device when a model takes them; the store tracks
// which names were taken so a model can report missing and unexpected tensors precisely.
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dattn/core/tensor.h"
#include "dattn/io/safetensors.h"

namespace dattn {

// A part of a tensor: `length` entries from `start` along dimension `dim` (tensor parallel: the rows of
// a column-parallel weight and its bias, dim 0; the columns of a row-parallel weight, dim 1).
struct TensorSlice {
  int dim = 0;
  std::int64_t start = 0, length = 0;
};

// Reads `dir/config.json`; throws UserError naming the path when it is missing or not a JSON object.
nlohmann::json read_component_config(const std::string& dir);

class WeightStore {
 public:
  // `dir` holds exactly one of: `*.safetensors.index.json` (sharded), or one `*.safetensors` file
  // (diffusers: diffusion_pytorch_model.safetensors; transformers: model.safetensors). Throws UserError
  // naming the directory when there are none or several candidates, or the index names missing shards.
  explicit WeightStore(const std::string& dir);
  // A store over explicit files (tests, tools).
  explicit WeightStore(const std::vector<std::string>& files);

  const std::string& source() const { return source_; }
  bool contains(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;  // throws UserError naming the tensor
  std::vector<std::string> names() const;

  // The tensor converted to `dtype` on `device`, shape checked against `expected_shape` (when not
  // empty). Marks the name as used. Throws UserError: "transformer/diffusion_pytorch_model.safetensors:
  // tensor 'blocks.0.attn1.to_q.weight' has shape [64,64], expected [128,128]" or "... not found".
  // On CUDA the stored bytes go through the current context's pinned staging ring and a dtype change is
  // made on the GPU (core/upload.h): the copies are queued on the context's stream when this returns
  // (work queued after them sees the tensor complete; RunContext::synchronize waits for them).
  Tensor take(const std::string& name, DType dtype, Device device, const Shape& expected_shape = {});
  // The slice of the tensor only, copied straight from the mapped file (the rest is never read into
  // memory), then converted as take() does. `expected_shape` is the whole tensor's. Throws UserError
  // naming the tensor when the slice is not inside it.
  Tensor take(const std::string& name, DType dtype, Device device, const Shape& expected_shape,
              const TensorSlice& slice);

  // The tensor as stored (the file's dtype), a read-only host view into the mapped file with no copy,
  // for weights that are repacked at once (the VAE convolutions: a 2 GB decoder copied once less). Valid
  // only while this store lives: keep nothing that points into it. Checks and marks it as take() does.
  Tensor host_view(const std::string& name, const Shape& expected_shape = {});

  // The tensor on the host in `dtype`. When the file stores it in `dtype`: a read-only view into the
  // mapped file that keeps the file mapped (no copy, pages read when touched: for large tables of which a
  // run reads a few rows, the text encoders' token embeddings); else a converted copy as take() makes.
  // Checks and marks it as take() does. Never write through the view.
  Tensor take_mapped(const std::string& name, DType dtype, const Shape& expected_shape = {});

  // Names in the files that no take() asked for, sorted.
  std::vector<std::string> unused() const;
  // Throws UserError listing up to 10 unused names (a checkpoint for another architecture or config).
  void require_all_used() const;

 private:
  const SafetensorsFile& file_of(const std::string& name) const;

  std::string source_;
  std::vector<std::shared_ptr<const SafetensorsFile>> files_;  // shared: take_mapped's views keep theirs
  std::vector<std::pair<std::string, std::size_t>> index_;  // sorted name -> file position
  std::set<std::string> used_;
};

// Converts one safetensors tensor (F64, F32, BF16, F16) to a host tensor of `dtype`.
Tensor tensor_from_safetensors(const SafetensorsFile& file, const std::string& name, DType dtype);

}  // namespace dattn
