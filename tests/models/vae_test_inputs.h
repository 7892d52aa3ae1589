#pragma once
// Inputs shared by the Wan VAE tests (CPU and CUDA): the golden tiny VAE's folder and seeded N(0, 1)
// latents.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"
#include "support/golden_dir.h"

namespace dattn::testing {

inline std::string golden_vae() { return golden_dir() + "/wan_tiny/pipeline/vae"; }

inline Tensor random_latents(const Shape& shape, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<std::size_t>(shape_numel(shape)));
  for (auto& x : v) x = normal(rng);
  return Tensor::from_f32(v, shape);
}

}  // namespace dattn::testing
