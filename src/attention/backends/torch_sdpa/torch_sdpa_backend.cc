// TORCH_SDPA: the conservative fallback, plain scaled dot-product attention implemented natively
// (the name is kept for configuration compatibility). CPU: cpu_sdpa.cc; CUDA: cuda/sdpa_cuda.cu.
#include <optional>
#include <string>

#include "attention/backends/backends.h"
#include "attention/backends/cuda_status.h"
#include "attention/backends/surface_checks.h"
#include "attention/backends/torch_sdpa/cpu_sdpa.h"
#include "dattn/core/error.h"
#ifdef DATTN_WITH_CUDA
#include "attention/backends/torch_sdpa/cuda/sdpa_cuda.h"
#endif

namespace dattn {
namespace {

constexpr const char* kKernels[] = {"auto", "gemm", "rows"};

bool known_kernel(const std::string& s) {
  for (const char* k : kKernels)
    if (s == k) return true;
  return false;
}

// The validated `kernel` extra (absent: auto).
std::string kernel_of(const nlohmann::json& extra) {
  const auto it = extra.find("kernel");
  return it == extra.end() || !it->is_string() ? "auto" : it->get<std::string>();
}

class TorchSdpaBackend final : public AttentionBackend {
 public:
  std::string_view name() const override { return "TORCH_SDPA"; }
  std::string_view summary() const override {
    return "plain scaled dot-product attention (fp32 scores, softmax, matmul); the conservative fallback";
  }
  bool lossy() const override { return false; }

  // Same surface on both devices except fp64, which the GPU kernel does not take. Every mask kind,
  // any positive head dim, GQA.
  Support supports(const AttentionShape& shape, Device device) const override {
    if (device == Device::CUDA)
      if (auto no = cuda_unusable()) return *no;
    if (auto no = refuse_dtype(surface(device), shape.dtype)) return *no;
    if (shape.head_dim <= 0) return Support::no("head_dim " + std::to_string(shape.head_dim) + " is not positive");
    return Support::yes();
  }

  SupportSurface surface(Device device) const override {
    if (device == Device::CUDA) return {{DType::F32, DType::BF16, DType::F16}, "any", "key padding, causal, general (boolean, additive)"};
    return {{DType::F32, DType::BF16, DType::F16, DType::F64}, "any", "key padding, causal, general (boolean, additive)"};
  }

  std::vector<ExtraKey> extra_keys() const override {
    return {{"kernel", ExtraKey::Type::String, "auto", "auto, gemm or rows",
             "CUDA kernel: gemm (the two products on cuBLASLt, fp32 scores, softmax and P.V; rows with a "
             "non-finite score or value go to the row kernel), rows (one warp per query row, nothing "
             "materialised), auto (gemm wherever it runs the problem, else rows); the CPU has one kernel and "
             "takes auto only",
             [](const nlohmann::json& value) -> std::optional<std::string> {
               if (!known_kernel(value.get<std::string>())) return "must be auto, gemm or rows";
               return std::nullopt;
             }}};
  }

  std::optional<std::string> extra_problem(const nlohmann::json& extra, Device device) const override {
    const std::string kernel = kernel_of(extra);
    if (device == Device::CPU && kernel != "auto")
      return "extra kernel '" + kernel + "' names a CUDA kernel; on cpu use auto";
    return std::nullopt;
  }

  void run(const AttentionProblem& problem, const nlohmann::json& extra, Device device) const override {
    const std::string kernel = kernel_of(extra);
    if (device == Device::CPU) {
      if (const auto why = extra_problem(extra, device)) throw UserError("TORCH_SDPA: " + *why);
      return sdpa::sdpa_attention_cpu(problem);
    }
#ifdef DATTN_WITH_CUDA
    sdpa::sdpa_attention_cuda(problem, kernel == "gemm"   ? sdpa::SdpaKernel::Gemm
                                       : kernel == "rows" ? sdpa::SdpaKernel::Rows
                                                          : sdpa::SdpaKernel::Auto);
#else
    throw UserError("TORCH_SDPA cannot run on cuda: " + cuda_unusable()->reason);
#endif
  }
};

}  // namespace

const AttentionBackend& torch_sdpa_backend() {
  static const TorchSdpaBackend backend;
  return backend;
}

}  // namespace dattn
