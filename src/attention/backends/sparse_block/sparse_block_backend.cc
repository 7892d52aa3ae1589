// SPARSE_BLOCK: block-sparse attention. The block mask is estimated per call from mean-pooled Q and K
// (block_mask.cc; on CUDA cuda/block_mask_cuda.cu, the same mask); exact attention then runs over the
// kept (query block, key block) pairs only, on the FLASH_ATTN core (CPU) or kernels (CUDA).
#include <algorithm>
#include <optional>
#include <string>

#include "attention/backends/backends.h"
#include "attention/backends/cuda_status.h"
#include "attention/backends/surface_checks.h"
#include "attention/kernels/flash/cpu_flash.h"
#include "attention/backends/sparse_block/block_mask.h"
#ifdef DATTN_WITH_CUDA
#include "attention/kernels/flash/flash_cuda.h"
#include "attention/backends/sparse_block/cuda/sparse_cuda.h"
#endif
#include "dattn/core/error.h"

namespace dattn {
namespace {

using nlohmann::json;

std::optional<std::string> check_unit_interval(const json& value) {
  const double x = value.get<double>();
  if (!(x > 0.0 && x <= 1.0)) return "must be in (0, 1]";
  return std::nullopt;
}

// A key the user left out (absent or null after extra_with_defaults) is not given.
std::optional<double> given_number(const json& extra, const char* key) {
  const auto it = extra.find(key);
  if (it == extra.end() || it->is_null()) return std::nullopt;
  return it->get<double>();
}

sparse::BlockMaskOptions mask_options(const json& extra) {
  sparse::BlockMaskOptions options;
  if (const auto it = extra.find("block_size"); it != extra.end() && !it->is_null())
    options.block_size = it->get<std::int64_t>();
  options.density = given_number(extra, "density");
  options.cdf_threshold = given_number(extra, "cdf_threshold");
  if (const auto it = extra.find("keep_diagonal"); it != extra.end() && !it->is_null())
    options.keep_diagonal = it->get<bool>();
  return options;
}

class SparseBlockBackend final : public AttentionBackend {
 public:
  std::string_view name() const override { return "SPARSE_BLOCK"; }
  std::string_view summary() const override {
    return "block-sparse attention: exact attention over the key blocks a mask estimated from pooled Q/K keeps";
  }
  bool lossy() const override { return true; }

  Support supports(const AttentionShape& shape, Device device) const override {
    // Its block mask is estimated without a causal term: refused on both devices alike.
    if (auto no = refuse_causal(shape)) return *no;
#ifdef DATTN_WITH_CUDA
    if (device == Device::CUDA) {
      if (auto no = cuda_unusable()) return *no;
      return sparse::sparse_cuda_supports(shape, cuda_compute_capability());
    }
#endif
    if (auto no = refuse_dtype(surface(device), shape.dtype)) return *no;
    if (shape.head_dim <= 0) return Support::no("head_dim " + std::to_string(shape.head_dim) + " is not positive");
    if (auto no = refuse_general_mask(shape)) return *no;
    if (device == Device::CUDA) return cuda_kernel_missing(name());
    return Support::yes();
  }

  // The spec's surface: fp32 on CPU; bf16/fp16 on CUDA (the FLASH_ATTN kernels' head dims).
  SupportSurface surface(Device device) const override {
    if (device == Device::CUDA) return {{DType::BF16, DType::F16}, "32, 64, 128", "key padding"};
    return {{DType::F32}, "any", "key padding"};
  }

  std::vector<ExtraKey> extra_keys() const override {
    return {
        {"block_size", ExtraKey::Type::Integer, sparse::kDefaultBlockSize, "64 or 128",
         "rows per query block and keys per key block of the mask",
         [](const json& value) -> std::optional<std::string> {
           const auto n = value.get<std::int64_t>();
           if (n != 64 && n != 128) return "must be 64 or 128";
           return std::nullopt;
         }},
        // No declared default: 0.25 applies only when cdf_threshold is absent too, and the backend
        // must see whether the user gave density (with cdf_threshold the smaller set wins).
        {"density", ExtraKey::Type::Number, nullptr, "(0, 1]",
         "fraction of valid key blocks kept per query block (at least one); default 0.25 unless "
         "cdf_threshold is given; 1 without cdf_threshold runs FLASH_ATTN (no mask)",
         check_unit_interval},
        {"cdf_threshold", ExtraKey::Type::Number, nullptr, "(0, 1]",
         "keep the fewest top key blocks whose estimated attention mass reaches this; with density "
         "too, the smaller set wins",
         check_unit_interval},
        {"keep_diagonal", ExtraKey::Type::Boolean, true, "true or false",
         "always keep the key block with the query block's index (first in the mask order)",
         [](const json&) -> std::optional<std::string> { return std::nullopt; }},
    };
  }

  void run(const AttentionProblem& problem, const json& extra, Device device) const override {
    const sparse::BlockMaskOptions options = mask_options(extra);
    // Every block kept: the listed walk would repeat FLASH_ATTN's steps bit for bit (tested on both
    // devices), so run FLASH_ATTN and skip the mask it would not use.
    const bool all_blocks = sparse::keeps_every_block(options);
    if (device == Device::CUDA) {
#ifdef DATTN_WITH_CUDA
      if (all_blocks)
        flash::flash_attention_cuda(problem);
      else
        sparse::sparse_block_cuda(problem, options);
      return;
#else
      throw UserError("SPARSE_BLOCK cannot run on cuda: " + cuda_kernel_missing(name()).reason);
#endif
    }
    if (all_blocks) {
      flash::flash_attention_cpu(problem);
      return;
    }
    sparse::BlockMask mask = sparse::estimate_block_mask(problem, options);
    // Visit kept blocks in ascending key order, as a dense kernel would; density 1 then repeats
    // FLASH_ATTN's sequence of online-softmax steps.
    for (auto& blocks : mask.kept) std::sort(blocks.begin(), blocks.end());
    flash::FlashTiling tiling;
    tiling.query_block = options.block_size;
    tiling.key_block = options.block_size;
    tiling.key_blocks = &mask.kept;
    flash::flash_attention_cpu(problem, tiling);
  }
};

}  // namespace

const AttentionBackend& sparse_block_backend() {
  static const SparseBlockBackend backend;
  return backend;
}

}  // namespace dattn
