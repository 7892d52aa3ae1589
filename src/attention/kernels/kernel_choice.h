#pragma once
// The `kernel` extra of FLASH_ATTN and SAGE_ATTN: which CUDA kernel runs a problem. "auto" takes the
// Hopper kernel wherever it runs the problem, else the portable one; "hopper" requires it (a problem it
// cannot run is a UserError, never a silent fallback); "portable" never uses it. The CPU has one kernel:
// "auto" and "portable" run it, "hopper" is refused there.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "dattn/attention/backend.h"

namespace dattn {

enum class KernelChoice { Auto, Portable, Hopper };

// The extra key as every such backend declares it (string, default "auto").
ExtraKey kernel_extra_key();
// The choice in a validated extra (absent: Auto).
KernelChoice kernel_choice(const nlohmann::json& extra);
std::string_view kernel_choice_name(KernelChoice choice);  // "auto", "portable", "hopper"
// Throws UserError when `choice` names a CUDA-only kernel and `device` is the CPU.
void check_kernel_choice_on(KernelChoice choice, Device device, std::string_view backend);
// Why `choice` cannot run on `device` (hopper on the CPU), or nullopt.
std::optional<std::string> kernel_choice_problem(KernelChoice choice, Device device);

}  // namespace dattn
