// SAGE_ATTN: SageAttention2-style quantized attention (INT8 Q.K with smoothed K, FP8 e4m3 P.V).
// The exact scheme is docs/backend-semantics.md, section SAGE_ATTN; cpu_sage.cc implements it on the
// CPU, cuda/ on the GPU (quantization pass, then the Hopper INT8/FP8 wgmma kernel or a portable one).
#include <string>

#include "attention/backends/backends.h"
#include "attention/backends/cuda_status.h"
#include "attention/kernels/kernel_choice.h"
#include "attention/backends/surface_checks.h"
#include "attention/backends/sage_attn/cpu_sage.h"
#ifdef DATTN_WITH_CUDA
#include "attention/backends/sage_attn/cuda/sage_cuda.h"
#endif
#include "dattn/core/error.h"

namespace dattn {
namespace {

class SageAttnBackend final : public AttentionBackend {
 public:
  std::string_view name() const override { return "SAGE_ATTN"; }
  std::string_view summary() const override {
    return "quantized attention (SageAttention2 scheme): smoothed K, INT8 Q.K per block, FP8 e4m3 P.V";
  }
  bool lossy() const override { return true; }

  // CPU and CUDA share one surface, so a problem is accepted or refused for the same reason on both.
  Support supports(const AttentionShape& shape, Device device) const override {
    if (auto no = refuse_dtype(surface(device), shape.dtype)) return *no;
    if (shape.head_dim != 64 && shape.head_dim != 128)
      return Support::no("head_dim " + std::to_string(shape.head_dim) + " not in {64, 128}");
    if (auto no = refuse_general_mask(shape)) return *no;
    if (auto no = refuse_causal(shape)) return *no;
    if (device == Device::CUDA) {
#ifdef DATTN_WITH_CUDA
      if (auto no = cuda_unusable()) return *no;
      return sage::sage_cuda_supports(shape, cuda_compute_capability());
#else
      return cuda_kernel_missing(name());
#endif
    }
    return Support::yes();
  }

  SupportSurface surface(Device) const override { return {{DType::BF16, DType::F16}, "64, 128", "key padding"}; }

  std::vector<ExtraKey> extra_keys() const override { return {kernel_extra_key()}; }
  std::optional<std::string> extra_problem(const nlohmann::json& extra, Device device) const override {
    return kernel_choice_problem(kernel_choice(extra), device);
  }

  void run(const AttentionProblem& problem, const nlohmann::json& extra, Device device) const override {
    const KernelChoice kernel = kernel_choice(extra);
    check_kernel_choice_on(kernel, device, name());
    if (device == Device::CUDA) {
#ifdef DATTN_WITH_CUDA
      sage::sage_attention_cuda(problem, kernel);
      return;
#else
      throw UserError("SAGE_ATTN cannot run on cuda: " + cuda_kernel_missing(name()).reason);
#endif
    }
    sage::sage_attention_cpu(problem);
  }
};

}  // namespace

const AttentionBackend& sage_attn_backend() {
  static const SageAttnBackend backend;
  return backend;
}

}  // namespace dattn
