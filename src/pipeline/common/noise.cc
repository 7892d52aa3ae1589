// The initial noise: dattn's seeded generator, or a tensor read from a file (to reproduce another
// implementation's run, e.g. diffusers' torch generator, exactly).
#include <cmath>
#include <numbers>
#include <random>

#include "dattn/core/error.h"
#include "dattn/io/safetensors.h"
#include "dattn/io/weight_store.h"
#include "dattn/pipeline/noise.h"

namespace dattn {
namespace {

// A uniform double in [0, 1) from the top 53 bits: exact and the same on every platform (unlike
// std::uniform_real_distribution / std::normal_distribution, whose algorithms are unspecified).
double uniform53(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

Tensor seeded_gaussian(const Shape& shape, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::int64_t n = shape_numel(shape);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - uniform53(rng);  // (0, 1]: log is finite
    const double u2 = uniform53(rng);
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    values[static_cast<std::size_t>(i)] = static_cast<float>(radius * std::cos(angle));
    if (i + 1 < n) values[static_cast<std::size_t>(i + 1)] = static_cast<float>(radius * std::sin(angle));
  }
  return Tensor::from_f32(values, shape);
}

Tensor read_initial_latents(const std::string& path) {
  const SafetensorsFile file(path);
  for (const char* name : {"input.latents", "latents"})
    if (file.contains(name)) return tensor_from_safetensors(file, name, DType::F32);
  throw UserError(path + ": no tensor 'input.latents' or 'latents'");
}

}  // namespace dattn
