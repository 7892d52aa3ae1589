#pragma once
// The parallel degrees a family can run, checked when the pipeline is built (configs read, no weights),
// and the request check of CFG parallel: both fail with the flag, its value and what was expected.
#include <cstdint>
#include <string>

#include "dattn/pipeline/pipeline.h"

namespace dattn::pipeline {

// Refuses tensor-parallel and Ulysses degrees that do not divide the transformer's `attention_heads`,
// then tensor parallel > 1 unless the family has it (`has_tensor_parallel`), Ulysses > 1 unless it has
// it (`has_ulysses`), and a CFG group of 2 whose guidance mode is not CfgParallel. `transformer` names
// the model in messages ("WanPipeline's transformer").
void check_parallel_degrees(const PipelineOptions& options, GuidanceMode mode, std::int64_t attention_heads,
                            const std::string& transformer, bool has_ulysses, bool has_tensor_parallel = false);

// Tensor parallel's further splits: the FFN's `ffn_dim` hidden columns divide by the degree, and with
// Ulysses too the heads divide by tensor parallel x Ulysses.
void check_tensor_parallel_split(const PipelineOptions& options, std::int64_t attention_heads, std::int64_t ffn_dim,
                                 const std::string& transformer);

// Ulysses splits the video tokens evenly: UserError when `tokens` does not divide by the degree.
void check_ulysses_tokens(const PipelineOptions& options, std::int64_t tokens);

// CfgParallel needs guidance to run: `guidance` false (scale <= 1, or a disabled guider) is refused.
void check_cfg_parallel_request(GuidanceMode mode, bool guidance, double scale);

}  // namespace dattn::pipeline
