#pragma once
// The --dtype option of a model run (generate, transformer), checked: "auto" (bf16 on CUDA, fp32 on the
// CPU: core/auto_choice.h), fp32, bf16 or fp16.
#include <optional>
#include <string>

#include "dattn/core/auto_choice.h"
#include "dattn/core/dtype.h"
#include "dattn/core/error.h"
#include "dattn/models/quantization.h"

namespace dattn::tool {

inline DType run_dtype_from_option(const std::string& text, Device device) {
  if (text == "auto") return auto_run_dtype(device);
  const auto d = parse_dtype(text);
  if (!d || (*d != DType::F32 && *d != DType::BF16 && *d != DType::F16))
    throw UserError("--dtype '" + text + "': expected auto, fp32, bf16 or fp16");
  return *d;
}

// --vae-dtype (generate, serve): "auto" (nullopt: the pipeline's rule, bf16 for a bf16 run on CUDA, else
// fp32; pipeline_vae_dtype), fp32 or bf16 (bf16 on CUDA only, checked when the pipeline is built).
inline std::optional<DType> vae_dtype_from_option(const std::string& text) {
  if (text == "auto") return std::nullopt;
  const auto d = parse_dtype(text);
  if (!d || (*d != DType::F32 && *d != DType::BF16))
    throw UserError("--vae-dtype '" + text + "': expected auto, fp32 or bf16");
  return *d;
}

// --quantization (generate, serve), vLLM-Omni's spelling: fp8 (the transformer's block linears in FP8
// e4m3; on the CPU an exact emulation of the CUDA arithmetic, slower than the plain run) or none.
inline Quantization quantization_from_option(const std::string& text, const std::string& flag = "--quantization") {
  const auto q = parse_quantization(text);
  if (!q) throw UserError(flag + " '" + text + "': expected fp8 or none");
  return *q;
}

inline constexpr const char* kQuantizationHelp =
    "Linear layers of the transformer: none, or fp8 (weights per output channel and activations per token "
    "in e4m3, FP8 GEMMs on CUDA; an exact emulation on cpu)";

}  // namespace dattn::tool
