// TORCH_SDPA: the conservative fallback, plain scaled dot-product attention implemented natively
// (the name is kept for configuration compatibility). CPU: cpu_sdpa.cc.
#include <string>

#include "attention/backends/backends.h"
#include "attention/backends/cuda_status.h"
#include "attention/backends/surface_checks.h"
#include "attention/backends/torch_sdpa/cpu_sdpa.h"
#include "dattn/core/error.h"

namespace dattn {
namespace {

class TorchSdpaBackend final : public AttentionBackend {
 public:
  std::string_view name() const override { return "TORCH_SDPA"; }
  std::string_view summary() const override {
    return "plain scaled dot-product attention (fp32 scores, softmax, matmul); the conservative fallback";
  }
  bool lossy() const override { return false; }

  Support supports(const AttentionShape& shape, Device device) const override {
    if (auto no = refuse_dtype(surface(device), shape.dtype)) return *no;
    if (shape.head_dim <= 0) return Support::no("head_dim " + std::to_string(shape.head_dim) + " is not positive");
    if (device == Device::CUDA) return cuda_kernel_missing(name());
    return Support::yes();
  }

  SupportSurface surface(Device) const override {
    return {{DType::F32, DType::BF16, DType::F16, DType::F64}, "any", "key padding, general (boolean, additive)"};
  }

  void run(const AttentionProblem& problem, const nlohmann::json&, Device device) const override {
    if (device != Device::CPU)
      throw UserError("TORCH_SDPA cannot run on cuda: " + cuda_kernel_missing(name()).reason);
    sdpa::sdpa_attention_cpu(problem);
  }
};

}  // namespace

const AttentionBackend& torch_sdpa_backend() {
  static const TorchSdpaBackend backend;
  return backend;
}

}  // namespace dattn
