// FLASH_ATTN: exact attention with the tiled online softmax. CPU: cpu_flash.cc (fp32 math); CUDA:
// the Hopper kernel (sm_90a) or the portable FlashAttention-2 kernel (cuda/flash_fwd_launch.cu, sm_80+), bf16/fp16
// with fp32 accumulation.
#include <algorithm>
#include <string>

#include "attention/backends/backends.h"
#include "attention/backends/cuda_status.h"
#include "attention/kernels/kernel_choice.h"
#include "attention/backends/surface_checks.h"
#include "attention/kernels/flash/cpu_flash.h"
#ifdef DATTN_WITH_CUDA
#include "attention/kernels/flash/flash_cuda.h"
#endif
#include "dattn/core/error.h"

namespace dattn {
namespace {

class FlashAttnBackend final : public AttentionBackend {
 public:
  std::string_view name() const override { return "FLASH_ATTN"; }
  std::string_view summary() const override {
    return "exact attention, tiled online softmax (FlashAttention); CPU: fp32 math, multi-threaded; "
           "CUDA: a Hopper kernel (sm_90a: TMA, wgmma, warp specialisation) and a portable one (sm_80+)";
  }
  bool lossy() const override { return false; }

  // CUDA: no CUDA build or device first, then the kernel's own predicate (compute capability, dtype,
  // head dim, masks). In a build without CUDA the surface answers first, then the missing kernel.
  Support supports(const AttentionShape& shape, Device device) const override {
#ifdef DATTN_WITH_CUDA
    if (device == Device::CUDA) {
      if (auto no = cuda_unusable()) return *no;
      return flash::flash_cuda_supports(shape, cuda_compute_capability());
    }
#endif
    if (auto no = refuse_dtype(surface(device), shape.dtype)) return *no;
    if (shape.head_dim <= 0) return Support::no("head_dim " + std::to_string(shape.head_dim) + " is not positive");
    if (auto no = refuse_general_mask(shape)) return *no;
    if (device == Device::CUDA) return cuda_kernel_missing(name());
    return Support::yes();
  }

  // CUDA: bf16/fp16 in, fp32 accumulation; CPU computes in fp32 from any of three.
  SupportSurface surface(Device device) const override {
    if (device == Device::CUDA) return {{DType::BF16, DType::F16}, "32, 64, 128", "key padding, causal"};
    return {{DType::F32, DType::BF16, DType::F16}, "any", "key padding, causal"};
  }

  std::vector<ExtraKey> extra_keys() const override { return {kernel_extra_key()}; }
  std::optional<std::string> extra_problem(const nlohmann::json& extra, Device device) const override {
    return kernel_choice_problem(kernel_choice(extra), device);
  }

  void run(const AttentionProblem& problem, const nlohmann::json& extra, Device device) const override {
    const KernelChoice kernel = kernel_choice(extra);
    check_kernel_choice_on(kernel, device, name());
    if (device == Device::CUDA) {
#ifdef DATTN_WITH_CUDA
      flash::flash_attention_cuda(problem, kernel);
      return;
#else
      throw UserError("FLASH_ATTN cannot run on cuda: " + cuda_kernel_missing(name()).reason);
#endif
    }
    flash::flash_attention_cpu(problem);
  }
};

}  // namespace

const AttentionBackend& flash_attn_backend() {
  static const FlashAttnBackend backend;
  return backend;
}

}  // namespace dattn
