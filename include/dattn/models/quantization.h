#pragma once
// Weight/activation quantization of a model's linear layers, as vLLM-Omni's --quantization names it.
#include <optional>
#include <string_view>

namespace dattn {

// None: every linear in the run dtype. Fp8: the transformer blocks' linears in FP8 e4m3 (weights per
// output channel, activations per token: ops/linear_fp8.h); each model documents which layers.
enum class Quantization { None, Fp8 };

inline std::optional<Quantization> parse_quantization(std::string_view s) {
  if (s == "none") return Quantization::None;
  if (s == "fp8") return Quantization::Fp8;
  return std::nullopt;
}

inline const char* quantization_name(Quantization q) { return q == Quantization::Fp8 ? "fp8" : "none"; }

}  // namespace dattn
