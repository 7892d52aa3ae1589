// FLASH_ATTN: exact attention with the tiled online softmax. CPU: cpu_flash.cc (fp32 math).
#include <algorithm>
#include <string>

#include "attention/backends/backends.h"
#include "attention/backends/cuda_status.h"
#include "attention/backends/surface_checks.h"
#include "attention/backends/flash_attn/cpu_flash.h"
#include "dattn/core/error.h"

namespace dattn {
namespace {

class FlashAttnBackend final : public AttentionBackend {
 public:
  std::string_view name() const override { return "FLASH_ATTN"; }
  std::string_view summary() const override {
    return "exact attention, tiled online softmax (FlashAttention); CPU: fp32 math, multi-threaded";
  }
  bool lossy() const override { return false; }

  // The surface of the device decides; CUDA then answers that its kernel is missing, so a problem
  // outside the CUDA surface is refused for that reason first.
  Support supports(const AttentionShape& shape, Device device) const override {
    if (auto no = refuse_dtype(surface(device), shape.dtype)) return *no;
    if (shape.head_dim <= 0) return Support::no("head_dim " + std::to_string(shape.head_dim) + " is not positive");
    if (auto no = refuse_general_mask(shape)) return *no;
    if (device == Device::CUDA) return cuda_kernel_missing(name());
    return Support::yes();
  }

  // CUDA: the spec's surface (bf16/fp16) for the kernel to come; CPU computes in fp32 from any of three.
  SupportSurface surface(Device device) const override {
    if (device == Device::CUDA) return {{DType::BF16, DType::F16}, "any", "key padding"};
    return {{DType::F32, DType::BF16, DType::F16}, "any", "key padding"};
  }

  void run(const AttentionProblem& problem, const nlohmann::json&, Device device) const override {
    if (device != Device::CPU)
      throw UserError("FLASH_ATTN cannot run on cuda: " + cuda_kernel_missing(name()).reason);
    flash::flash_attention_cpu(problem);
  }
};

}  // namespace

const AttentionBackend& flash_attn_backend() {
  static const FlashAttnBackend backend;
  return backend;
}

}  // namespace dattn
