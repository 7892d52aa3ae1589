#pragma once
// The parallel degrees a family can run, checked when the pipeline is built (configs read, no weights),
// and the request check of CFG parallel: both fail with the flag, its value and what was expected.
#include <cstdint>
#include <string>

#include "dattn/pipeline/pipeline.h"

namespace dattn::pipeline {

// Refuses tensor-parallel and Ulysses degrees that do not divide the transformer's `attention_heads`,
// then tensor parallel > 1 (not built yet), Ulysses > 1 unless the family has it (`has_ulysses`), and a
// CFG group of 2 whose guidance mode is not CfgParallel. `transformer` names the model in messages
// ("WanPipeline's transformer").
void check_parallel_degrees(const PipelineOptions& options, GuidanceMode mode, std::int64_t attention_heads,
                            const std::string& transformer, bool has_ulysses);

// Ulysses splits the video tokens evenly: UserError when `tokens` does not divide by the degree.
void check_ulysses_tokens(const PipelineOptions& options, std::int64_t tokens);

// CfgParallel needs guidance to run: `guidance` false (scale <= 1, or a disabled guider) is refused.
void check_cfg_parallel_request(GuidanceMode mode, bool guidance, double scale);

}  // namespace dattn::pipeline
