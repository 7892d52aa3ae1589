#pragma once
// The initial noise of a generation: dattn's seeded generator, or a tensor read from a file (to
// reproduce another implementation's run, e.g. diffusers' torch generator, exactly).
#include <cstdint>
#include <string>

#include "dattn/core/tensor.h"

namespace dattn {

// dattn's own seeded Gaussian noise (not torch's generator, so a seed does not reproduce a diffusers
// video): std::mt19937_64(seed), two 53-bit uniforms per pair, Box-Muller (u1 in (0, 1]), values in
// row-major order, rounded to float32. Deterministic across platforms and compilers.
Tensor seeded_gaussian(const Shape& shape, std::uint64_t seed);

// `input.latents` or `latents` from a safetensors file, as a float32 host tensor. Throws UserError
// when neither is there.
Tensor read_initial_latents(const std::string& path);

}  // namespace dattn
