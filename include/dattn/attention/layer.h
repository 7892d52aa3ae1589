#pragma once
// An attention layer of a model: declares its role at build time, resolves its backend once (logged
// once), and refuses to build when an explicitly chosen backend cannot run its problem.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dattn/attention/backend.h"
#include "dattn/attention/selector.h"

namespace dattn {

class AttentionLayer {
 public:
  // `name` is the layer's module path ("blocks.3.attn2"), used in errors. `shape` is the problem the
  // layer will run (batch and sequence lengths may change later; dtype, heads and head dim may not).
  // Throws ConfigError: "SAGE_ATTN cannot run role 'cross' (blocks.3.attn2): head_dim 256 not in
  // {64, 128}. Backends that can: FLASH_ATTN, TORCH_SDPA".
  AttentionLayer(std::string name, std::string role, std::optional<std::string> category,
                 const AttentionSettings& settings, const AttentionShape& shape, Device device);

  const Resolution& resolution() const { return resolution_; }
  const AttentionBackend& backend() const { return *backend_; }
  // The backend's extra with every defaulted key filled in: what forward() passes to the backend.
  const nlohmann::json& extra() const { return extra_; }
  void forward(const AttentionProblem& problem) const;

 private:
  std::string name_;
  Resolution resolution_;
  const AttentionBackend* backend_ = nullptr;
  nlohmann::json extra_;  // with defaults
  Device device_;
};

}  // namespace dattn
