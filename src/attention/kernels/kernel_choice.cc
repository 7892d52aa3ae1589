#include "attention/kernels/kernel_choice.h"

#include <optional>
#include <string>

#include "dattn/core/error.h"

namespace dattn {
namespace {

std::optional<KernelChoice> parse(std::string_view s) {
  if (s == "auto") return KernelChoice::Auto;
  if (s == "portable") return KernelChoice::Portable;
  if (s == "hopper") return KernelChoice::Hopper;
  return std::nullopt;
}

}  // namespace

ExtraKey kernel_extra_key() {
  return {"kernel", ExtraKey::Type::String, "auto", "auto, hopper or portable",
          "CUDA kernel: auto (the Hopper kernel where it runs the problem, else the portable one), hopper "
          "(required: a problem it cannot run is an error), portable (never the Hopper kernel); the CPU "
          "runs its one kernel for auto and portable",
          [](const nlohmann::json& value) -> std::optional<std::string> {
            if (!parse(value.get<std::string>())) return "must be auto, hopper or portable";
            return std::nullopt;
          }};
}

KernelChoice kernel_choice(const nlohmann::json& extra) {
  const auto it = extra.find("kernel");
  if (it == extra.end() || it->is_null()) return KernelChoice::Auto;
  if (!it->is_string()) throw UserError("extra 'kernel' " + it->dump() + ": expected a string");
  const std::string s = it->get<std::string>();
  if (const auto c = parse(s)) return *c;
  throw UserError("extra 'kernel' '" + s + "': expected auto, hopper or portable");
}

std::string_view kernel_choice_name(KernelChoice choice) {
  switch (choice) {
    case KernelChoice::Auto: return "auto";
    case KernelChoice::Portable: return "portable";
    case KernelChoice::Hopper: return "hopper";
  }
  return "?";
}

std::optional<std::string> kernel_choice_problem(KernelChoice choice, Device device) {
  if (choice == KernelChoice::Hopper && device == Device::CPU)
    return "extra kernel 'hopper' names a CUDA kernel; on cpu use auto or portable";
  return std::nullopt;
}

void check_kernel_choice_on(KernelChoice choice, Device device, std::string_view backend) {
  if (const auto why = kernel_choice_problem(choice, device)) throw UserError(std::string(backend) + ": " + *why);
}

}  // namespace dattn
