// dattn_wan_vae_bench: times the Wan VAE decode (CPU, or CUDA with --device cuda) on a model directory or
// on random weights in the real Wan2.2-TI2V-5B / Wan2.1 decoder shapes, and prints seconds, seconds per
// latent frame and GFLOP/s (the FLOPs of the convolutions and attention, counted from the architecture
// below); on CUDA also the first decode (which plans every convolution shape) and the peak device memory
// held by dattn's tensors (cuDNN's and cuBLASLt's handles and cuBLASLt's 32 MB workspace not included).
//
//   dattn_wan_vae_bench --random wan2.2-5b --latent 2,4,4 [--keep /tmp/wan22_vae]   (then --model /tmp/wan22_vae)
//   dattn_wan_vae_bench --model ../shared/golden/wan_tiny/pipeline/vae --latent 3,4,6 --repeat 5
//   dattn_wan_vae_bench --random wan2.2-5b --latent 13,44,80 --device cuda --repeat 3   (704x1280x49)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dattn/core/device.h"
#include "dattn/core/device_memory.h"
#include "dattn/core/error.h"
#include "dattn/models/wan_vae.h"

namespace dattn::bench {
namespace {

WanVaeConfig preset(const std::string& name) {
  WanVaeConfig c;
  if (name == "wan2.2-5b") {  // Wan-AI/Wan2.2-TI2V-5B-Diffusers vae/config.json
    c.base_dim = 160, c.decoder_base_dim = 256, c.z_dim = 48, c.is_residual = true;
    c.in_channels = c.out_channels = 12, c.patch_size = 2, c.scale_factor_spatial = 16;
  } else if (name == "wan2.1") {  // Wan-AI/Wan2.1-T2V-*-Diffusers vae/config.json
    c.base_dim = c.decoder_base_dim = 96, c.z_dim = 16;
  } else {
    throw UserError("--random must be wan2.2-5b or wan2.1, got '" + name + "'");
  }
  c.num_res_blocks = 2;
  c.latents_mean.assign(c.z_dim, 0.0);
  c.latents_std.assign(c.z_dim, 1.0);
  return WanVaeConfig::from_json(c.to_json());
}

// Multiply-adds x 2 of the decode of one video of t latent frames of h x w, stage by stage.
double decode_flops(const WanVaeConfig& c, double t, double h, double w) {
  std::vector<double> dims = {double(c.decoder_base_dim * c.dim_mult.back())};
  for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(c.decoder_base_dim * *it);
  const auto conv = [](double cin, double cout, double taps, double outputs) { return 2 * cin * cout * taps * outputs; };
  double px = h * w, frames = t, d = dims[0];
  double f = conv(c.z_dim, c.z_dim, 1, frames * px) + conv(c.z_dim, d, 27, frames * px);
  f += 4 * conv(d, d, 27, frames * px);                                    // middle residual blocks
  f += frames * (conv(d, 4 * d, 1, px) + 4 * px * px * d);                  // attention: qkv, proj, QK^T, PV
  const std::vector<bool> temporal = c.temporal_upsample();
  for (std::size_t i = 0; i < c.dim_mult.size(); ++i) {
    double in = (i > 0 && !c.is_residual) ? dims[i] / 2 : dims[i];
    const double out = dims[i + 1];
    for (int j = 0; j <= c.num_res_blocks; ++j, in = out)
      f += conv(in, out, 27, frames * px) + conv(out, out, 27, frames * px) + (in != out ? conv(in, out, 1, frames * px) : 0);
    if (i + 1 == c.dim_mult.size()) break;
    if (temporal[i]) {
      f += conv(out, 2 * out, 3, (frames - 1) * px);  // the first latent frame is not doubled
      frames = 1 + 2 * (frames - 1);
    }
    px *= 4;
    f += conv(out, c.is_residual ? out : out / 2, 9, frames * px);
  }
  return f + conv(dims.back(), c.out_channels, 27, frames * px);
}

int run(int argc, char** argv) {
  CLI::App app{"Times the Wan VAE decode"};
  std::string model, random, keep, latent = "2,4,4", device_arg = "cpu", math_arg = "tf32";
  int repeat = 1;
  app.add_option("--model", model, "a diffusers AutoencoderKLWan directory");
  app.add_option("--random", random, "random weights in real decoder shapes: wan2.2-5b or wan2.1");
  app.add_option("--keep", keep, "with --random: write the checkpoint to this directory and keep it");
  app.add_option("--latent", latent, "latent frames,height,width (default 2,4,4)");
  app.add_option("--repeat", repeat, "timed decodes (the median is printed)")->check(CLI::PositiveNumber);
  app.add_option("--device", device_arg, "cpu (default) or cuda");
  app.add_option("--conv-math", math_arg, "CUDA convolutions: tf32 (default) or fp32");
  CLI11_PARSE(app, argc, argv);
  const std::optional<Device> device = parse_device(device_arg);
  if (!device) throw UserError("--device must be cpu or cuda, got '" + device_arg + "'");
  if (math_arg != "tf32" && math_arg != "fp32") throw UserError("--conv-math must be tf32 or fp32, got '" + math_arg + "'");
  const WanVaeConvMath math = math_arg == "tf32" ? WanVaeConvMath::TF32 : WanVaeConvMath::FP32;
  const bool cuda = *device == Device::CUDA;
  if (model.empty() == random.empty()) throw UserError("give exactly one of --model and --random");
  std::vector<std::int64_t> tl;
  std::stringstream ss(latent);
  for (std::string part; std::getline(ss, part, ',');) tl.push_back(std::stoll(part));
  if (tl.size() != 3) throw UserError("--latent must be T,H,W, got '" + latent + "'");

  std::string dir = model;
  const std::string tmp =
      keep.empty() ? (std::filesystem::temp_directory_path() / "dattn_wan_vae_bench").string() : keep;
  const auto t0 = std::chrono::steady_clock::now();
  if (!random.empty()) write_random_wan_vae_decoder(dir = tmp, preset(random), 1);
  const auto t1 = std::chrono::steady_clock::now();
  const WanVae vae = WanVae::load(dir, *device, DType::F32, math);
  const auto t2 = std::chrono::steady_clock::now();
  if (!random.empty() && keep.empty()) std::filesystem::remove_all(tmp);

  const WanVaeConfig& c = vae.config();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> zv(static_cast<std::size_t>(c.z_dim * tl[0] * tl[1] * tl[2]));
  for (auto& v : zv) v = normal(rng);
  const Tensor z = Tensor::from_f32(zv, {1, c.z_dim, tl[0], tl[1], tl[2]});
  std::vector<double> times;
  Shape out_shape;
  double first = 0;
  std::size_t peak = 0;
  const std::size_t weights = cuda ? device_bytes_in_use() : 0;
  if (cuda) {
    // The first decode plans every convolution shape (cuDNN's algorithm choice) and warms the memory
    // pool; it is reported on its own. decode() returns after the GPU finished, so wall time is GPU time.
    reset_device_peak();
    const auto a = std::chrono::steady_clock::now();
    out_shape = vae.decode(z).shape();
    first = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    peak = device_bytes_peak();
  }
  for (int i = 0; i < repeat; ++i) {
    if (cuda) reset_device_peak();
    const auto a = std::chrono::steady_clock::now();
    out_shape = vae.decode(z).shape();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
    if (cuda) peak = std::max(peak, device_bytes_peak());
  }
  std::sort(times.begin(), times.end());
  const double secs = times[times.size() / 2];
  const double flops = decode_flops(c, tl[0], tl[1], tl[2]);
  std::printf("decoder_base_dim=%d z_dim=%d residual=%d patch=%d device=%s", c.decoder_base_dim, c.z_dim,
              c.is_residual, c.patch_size, cuda ? "cuda" : "cpu");
  if (cuda)
    std::printf(" (%s) conv_math=%s\n", cuda_device_summary().c_str(), math_arg.c_str());
  else
    std::printf(" threads=%d\n", omp_get_max_threads());
  std::printf("latent %s -> video %s\n", shape_str(z.shape()).c_str(), shape_str(out_shape).c_str());
  if (!random.empty()) std::printf("random checkpoint written in %.2f s\n", std::chrono::duration<double>(t1 - t0).count());
  std::printf("load %.2f s, decode %.3f s (median of %d), %.3f s per latent frame, %.1f GFLOP, %.1f GFLOP/s\n",
              std::chrono::duration<double>(t2 - t1).count(), secs, repeat, secs / tl[0], flops / 1e9,
              flops / secs / 1e9);
  if (cuda)
    std::printf("first decode %.3f s (plans the convolutions); peak device memory %.2f GiB (weights %.2f GiB and "
                "the video included)\n",
                first, static_cast<double>(peak) / (1u << 30), static_cast<double>(weights) / (1u << 30));
  return 0;
}

}  // namespace
}  // namespace dattn::bench

int main(int argc, char** argv) {
  try {
    return dattn::bench::run(argc, argv);
  } catch (const dattn::UserError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
