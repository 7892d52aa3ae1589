#pragma once
// Taking a model's parameters from a weight store by its manifest, with one precise report of what does
// not match the config (every missing and unexpected tensor at once).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "dattn/io/weight_store.h"
#include "dattn/models/param_spec.h"

namespace dattn::models {

struct ParamLoadOptions {
  std::string model_class;  // named in the error ("WanTransformer3DModel")
  DType dtype = DType::F32;  // of every parameter but the manifest's keep_fp32 ones
  Device device = Device::CPU;
  // Checkpoint tensors that are neither expected nor an error (diffusers' _keys_to_ignore_on_load_unexpected).
  std::function<bool(const std::string&)> ignored;
  // The part of a parameter this process holds (tensor parallel: its rows or columns), nullopt or no
  // function for the whole tensor. Only the part is read from the file.
  std::function<std::optional<TensorSlice>(const std::string&)> slice;
};

// Checks the store's names against the manifest first (UserError naming the directory and the tensors),
// then takes each tensor (or its slice), shape checked, converted to its dtype on the device.
std::map<std::string, Tensor> load_params(WeightStore& store, const std::vector<ParamSpec>& manifest,
                                          const ParamLoadOptions& options);

}  // namespace dattn::models
