// The parallel checks of the pipelines (see parallel_checks.h).
#include "pipeline/common/parallel_checks.h"

#include <cstdio>
#include <numeric>
#include <string>

#include "dattn/core/error.h"

namespace dattn::pipeline {
namespace {

// "1, 2, 3, 4, 6, 8, 12 or 24": the degrees that split `heads` evenly.
std::string divisors(std::int64_t heads) {
  std::string out;
  for (std::int64_t d = 1; d <= heads; ++d)
    if (heads % d == 0) out += (out.empty() ? "" : (d == heads ? " or " : ", ")) + std::to_string(d);
  return out;
}

void check_head_split(const char* flag, int degree, std::int64_t heads, const std::string& transformer) {
  if (heads % degree != 0)
    throw UserError(std::string(flag) + " " + std::to_string(degree) + ": " + transformer + " has " +
                    std::to_string(heads) + " attention heads, not a multiple of " + std::to_string(degree) +
                    "; expected " + divisors(heads));
}

}  // namespace

void check_parallel_degrees(const PipelineOptions& options, GuidanceMode mode, std::int64_t attention_heads,
                            const std::string& transformer, bool has_ulysses, bool has_tensor_parallel) {
  const parallel::ParallelDegrees& d = options.parallel.degrees;
  check_head_split("--tensor-parallel-size", d.tensor_parallel, attention_heads, transformer);
  check_head_split("--ulysses-degree", d.ulysses, attention_heads, transformer);
  if (d.tensor_parallel > 1 && !has_tensor_parallel)
    throw UserError("--tensor-parallel-size " + std::to_string(d.tensor_parallel) +
                    ": tensor parallel is not built yet for " + transformer + " (docs/parallel.md); expected 1");
  if (d.ulysses > 1 && !has_ulysses)
    throw UserError("--ulysses-degree " + std::to_string(d.ulysses) + ": Ulysses sequence parallel is not built yet for " +
                    transformer + " (docs/parallel.md); expected 1");
  if (d.cfg == 2 && mode != GuidanceMode::CfgParallel)
    throw UserError("--cfg-parallel-size 2 with --guidance " + std::string(guidance_mode_name(mode)) +
                    ": expected --guidance cfg-parallel (or no --guidance)");
}

void check_tensor_parallel_split(const PipelineOptions& options, std::int64_t attention_heads, std::int64_t ffn_dim,
                                 const std::string& transformer) {
  const parallel::ParallelDegrees& d = options.parallel.degrees;
  const int t = d.tensor_parallel, both = t * d.ulysses;
  if (t > 1 && ffn_dim % t != 0)
    throw UserError("--tensor-parallel-size " + std::to_string(t) + ": " + transformer + " has an FFN of " +
                    std::to_string(ffn_dim) + " columns, not a multiple of " + std::to_string(t) +
                    "; expected " + divisors(std::gcd(attention_heads, ffn_dim)));
  if (t > 1 && d.ulysses > 1 && attention_heads % both != 0)
    throw UserError("--tensor-parallel-size " + std::to_string(t) + " x --ulysses-degree " + std::to_string(d.ulysses) +
                    ": " + transformer + " has " + std::to_string(attention_heads) +
                    " attention heads, not a multiple of " + std::to_string(both) +
                    " (each rank runs heads / (tensor parallel x Ulysses)); expected degrees whose product is " +
                    divisors(attention_heads));
}

void check_ulysses_tokens(const PipelineOptions& options, std::int64_t tokens) {
  const int u = options.parallel.degrees.ulysses;
  if (u > 1 && tokens % u != 0)
    throw UserError("--ulysses-degree " + std::to_string(u) + ": this request has " + std::to_string(tokens) +
                    " latent video tokens, not a multiple of " + std::to_string(u) +
                    "; expected --height, --width and --num-frames whose token count divides by it");
}

void check_cfg_parallel_request(GuidanceMode mode, bool guidance, double scale) {
  if (mode != GuidanceMode::CfgParallel || guidance) return;
  char value[32];
  std::snprintf(value, sizeof value, "%g", scale);
  throw UserError(std::string("--cfg-parallel-size 2 runs the conditional and unconditional branches on two ranks, "
                              "but this request runs no guidance (guidance scale ") + value +
                  ", guidance runs when it is > 1): expected --guidance-scale > 1, or --cfg-parallel-size 1");
}

}  // namespace dattn::pipeline
