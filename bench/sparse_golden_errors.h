#pragma once
// SPARSE_BLOCK's error to exact attention at each density on the golden diffusers attention inputs
// (wan_tiny's self and cross attention), on CUDA in bf16, printed as a table beside the timings.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dattn::bench {

// Prints one row per (case, block size, density) plus FLASH_ATTN's (the bf16 floor); returns the rows
// as JSON. Throws UserError when the golden file is missing.
nlohmann::ordered_json print_sparse_golden_errors(const std::string& golden_dir, const std::vector<double>& densities);

}  // namespace dattn::bench
