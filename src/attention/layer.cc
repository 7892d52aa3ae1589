// An attention layer resolves its backend when the model is built, so a configuration that cannot run
// fails before any weights are used, never by silently falling back at the first step.
#include "dattn/attention/layer.h"

#include "dattn/attention/registry.h"
#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"

namespace dattn {
namespace {

// "FLASH_ATTN, TORCH_SDPA", or "none": every registered backend whose predicate accepts the shape.
std::string backends_that_can(const AttentionShape& shape, Device device) {
  std::string list;
  for (const AttentionBackend* b : registered_backends())
    if (b->supports(shape, device).ok) list += (list.empty() ? "" : ", ") + std::string(b->name());
  return list.empty() ? "none" : list;
}

}  // namespace

AttentionLayer::AttentionLayer(std::string name, std::string role, std::optional<std::string> category,
                               const AttentionSettings& settings, const AttentionShape& shape, Device device)
    : name_(std::move(name)),
      resolution_(resolve_attention(settings, role, category, shape, device)),
      backend_(&backend_by_name(resolution_.backend)),
      device_(device) {
  log_resolution_once(resolution_);
  // The platform default was chosen for this very shape; only an explicit choice can fail to run it.
  if (resolution_.is_explicit()) {
    const Support support = backend_->supports(shape, device);
    if (!support.ok)
      throw ConfigError(resolution_.backend + " cannot run role '" + resolution_.role + "' (" + name_ +
                        "): " + support.reason + ". Backends that can: " + backends_that_can(shape, device));
  }
  extra_ = extra_with_defaults(*backend_, resolution_.extra);
  if (const auto why = backend_->extra_problem(extra_, device))
    throw ConfigError(resolution_.backend + " cannot run role '" + resolution_.role + "' (" + name_ + "): " + *why);
}

void AttentionLayer::forward(const AttentionProblem& problem) const {
  const StageScope timed("attention");
  run_attention(*backend_, problem, extra_, device_);
}

}  // namespace dattn
