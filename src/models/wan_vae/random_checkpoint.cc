// write_random_wan_vae_decoder: a decode-only Wan VAE checkpoint with seeded random weights.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "dattn/core/error.h"
#include "dattn/io/safetensors_writer.h"
#include "dattn/models/wan_vae.h"

namespace dattn {

void write_random_wan_vae_decoder(const std::string& dir, const WanVaeConfig& config, std::uint64_t seed) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError("cannot create '" + dir + "': " + ec.message());
  {
    std::ofstream cfg(fs::path(dir) / "config.json");
    cfg << config.to_json().dump(2) << "\n";
    if (!cfg) throw UserError("cannot write '" + (fs::path(dir) / "config.json").string() + "'");
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<WrittenTensor> tensors;
  for (const auto& [name, shape] : wan_vae_decoder_tensors(config)) {
    const std::int64_t n = shape_numel(shape);
    std::vector<float> values(static_cast<std::size_t>(n));
    if (name.ends_with(".gamma")) {
      for (auto& v : values) v = 1.0f + 0.1f * normal(rng);
    } else if (name.ends_with(".bias")) {
      for (auto& v : values) v = 0.02f * normal(rng);
    } else {
      // Unit-variance outputs for unit-variance inputs: scale by 1/sqrt(fan_in).
      const float scale = 1.0f / std::sqrt(static_cast<float>(n / shape[0]));
      for (auto& v : values) v = scale * normal(rng);
    }
    WrittenTensor t{name, "F32", shape, std::vector<std::uint8_t>(values.size() * sizeof(float))};
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    tensors.push_back(std::move(t));
  }
  write_safetensors((fs::path(dir) / "diffusion_pytorch_model.safetensors").string(), tensors);
}

}  // namespace dattn
