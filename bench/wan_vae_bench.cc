// dattn_wan_vae_bench: times the Wan VAE decode (CPU, or CUDA with --device cuda) on a model directory or
// on random weights in the real Wan2.2-TI2V-5B / Wan2.1 decoder shapes, and prints seconds, seconds per
// latent frame and GFLOP/s (the FLOPs of the convolutions and attention, counted from the architecture
// below); on CUDA also the first decode (which plans every convolution shape) and the peak device memory
// held by dattn's tensors (cuDNN's and cuBLASLt's handles and cuBLASLt's 32 MB workspace not included).
// `--family hv15` times the HunyuanVideo-1.5 VAE decode the same way (no FLOP count): `--random hv1.5`
// writes random weights of configs/hunyuanvideo1.5-480p-t2v/vae.json (or `--config`).
//
// `--dtype fp32|bf16|both` (CUDA): the decoder's activations; `both` times fp32 (the --conv-math) and
// then bf16 on the same latents in one run, one VAE loaded at a time, and prints the bf16 video's
// relative L2 and max abs difference from the fp32 one.
//
//   dattn_wan_vae_bench --random wan2.2-5b --latent 2,4,4 [--keep /tmp/wan22_vae]   (then --model /tmp/wan22_vae)
//   dattn_wan_vae_bench --model ../shared/golden/wan_tiny/pipeline/vae --latent 3,4,6 --repeat 5
//   dattn_wan_vae_bench --random wan2.2-5b --latent 13,44,80 --device cuda --repeat 3   (704x1280x49)
//   dattn_wan_vae_bench --random wan2.2-5b --latent 13,44,80 --device cuda --dtype both --repeat 3
//   dattn_wan_vae_bench --model DIR --latent 13,44,80 --device cuda --dtype bf16 --warm-latent 1,2,2
//       (a small decode first: what the first full decode still pays after it)
//   dattn_wan_vae_bench --family hv15 --random hv1.5 --latent 9,30,52 --device cuda --dtype both --repeat 3
//       (480x832x33; --latent 31,30,52 is 121 frames)
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <chrono>
#include <cstdio>
#include <exception>
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
#include "dattn/models/hunyuanvideo15_vae.h"
#include "dattn/models/random_checkpoint.h"
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

// One VAE of either family behind one decode call.
struct Decoder {
  std::function<Tensor(const Tensor&)> decode;
  Shape latent;  // [1, C, T, H, W] of the requested latent size
  std::string describe;
  double flops = 0;  // 0: not counted
};

Decoder load_decoder(const std::string& family, const std::string& dir, Device device, DType dtype, WanVaeConvMath math,
                     const std::vector<std::int64_t>& tl) {
  Decoder d;
  char line[256];
  if (family == "wan") {
    auto vae = std::make_shared<WanVae>(WanVae::load(dir, device, dtype, math));
    const WanVaeConfig& c = vae->config();
    d.decode = [vae](const Tensor& z) { return vae->decode(z); };
    d.latent = {1, c.z_dim, tl[0], tl[1], tl[2]};
    d.flops = decode_flops(c, tl[0], tl[1], tl[2]);
    std::snprintf(line, sizeof line, "wan decoder_base_dim=%d z_dim=%d residual=%d patch=%d", c.decoder_base_dim,
                  c.z_dim, c.is_residual, c.patch_size);
  } else {
    const HunyuanVideo15VaeConvMath hm =
        math == WanVaeConvMath::TF32 ? HunyuanVideo15VaeConvMath::TF32 : HunyuanVideo15VaeConvMath::FP32;
    auto vae = std::make_shared<HunyuanVideo15Vae>(HunyuanVideo15Vae::load(dir, device, dtype, hm));
    const HunyuanVideo15VaeConfig& c = vae->config();
    d.decode = [vae](const Tensor& z) { return vae->decode(z); };
    d.latent = {1, c.latent_channels, tl[0], tl[1], tl[2]};
    std::snprintf(line, sizeof line, "hv15 latent_channels=%d widths %d..%d", c.latent_channels,
                  c.decoder_channels().front(), c.decoder_channels().back());
  }
  d.describe = line;
  return d;
}

struct Timing {
  double load = 0, median = 0, first = 0, warm = 0;
  std::size_t peak = 0, weights = 0;
  Shape out;
  Tensor video;  // the last decode's, on the host (only kept for --dtype both)
};

Timing time_decode(const std::string& family, const std::string& dir, Device device, DType dtype, WanVaeConvMath math,
                   const std::vector<std::int64_t>& tl, const std::vector<std::int64_t>& warm_tl, int repeat,
                   bool keep_video, Decoder* info) {
  const bool cuda = device == Device::CUDA;
  Timing r;
  const std::size_t before = cuda ? device_bytes_in_use() : 0;
  const auto t1 = std::chrono::steady_clock::now();
  Decoder d = load_decoder(family, dir, device, dtype, math, tl);
  r.load = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  r.weights = cuda ? device_bytes_in_use() - before : 0;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> zv(static_cast<std::size_t>(shape_numel(d.latent)));
  for (auto& v : zv) v = normal(rng);
  const Tensor z = Tensor::from_f32(zv, d.latent);
  if (!warm_tl.empty()) {
    // A small decode first: what of the first decode's extra time its kernels and set-up take away.
    Shape ws = d.latent;
    for (int i = 0; i < 3; ++i) ws[2 + i] = warm_tl[i];
    std::vector<float> wv(static_cast<std::size_t>(shape_numel(ws)), 0.5f);
    const auto a = std::chrono::steady_clock::now();
    (void)d.decode(Tensor::from_f32(wv, ws));
    r.warm = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
  }
  if (cuda) {
    // The first decode plans every convolution shape (cuDNN's algorithm choice) and warms the memory
    // pool; it is reported on its own. decode() returns after the GPU finished, so wall time is GPU time.
    reset_device_peak();
    const auto a = std::chrono::steady_clock::now();
    r.out = d.decode(z).shape();
    r.first = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    r.peak = device_bytes_peak() - before;
  }
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    if (cuda) reset_device_peak();
    const auto a = std::chrono::steady_clock::now();
    const Tensor video = d.decode(z);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
    r.out = video.shape();
    if (cuda) r.peak = std::max(r.peak, device_bytes_peak() - before);
    if (keep_video && i + 1 == repeat) r.video = video.to(Device::CPU);
  }
  std::sort(times.begin(), times.end());
  r.median = times[times.size() / 2];
  *info = d;
  info->latent = z.shape();
  return r;
}

void print_timing(const char* label, const Timing& r, const Decoder& d, int repeat, std::int64_t latent_frames,
                  bool cuda) {
  std::printf("[%s] load %.2f s, decode %.3f s (median of %d), %.3f s per latent frame", label, r.load, r.median,
              repeat, r.median / latent_frames);
  if (d.flops > 0) std::printf(", %.1f GFLOP, %.1f GFLOP/s", d.flops / 1e9, d.flops / r.median / 1e9);
  std::printf("\n");
  if (cuda)
    std::printf(
        "[%s] first decode %.3f s (plans the convolutions); peak device memory %.2f GiB (weights %.2f GiB "
        "and the video included)\n",
        label, r.first, static_cast<double>(r.peak) / (1u << 30), static_cast<double>(r.weights) / (1u << 30));
  if (r.warm > 0) std::printf("[%s] --warm-latent decode before it %.3f s\n", label, r.warm);
}

int run(int argc, char** argv) {
  CLI::App app{"Times the Wan (or HunyuanVideo-1.5) VAE decode"};
  std::string model, random, keep, latent = "2,4,4", device_arg = "cpu", math_arg = "tf32", dtype_arg = "fp32";
  std::string family = "wan", config = "configs/hunyuanvideo1.5-480p-t2v/vae.json", warm_latent;
  int repeat = 1;
  app.add_option("--family", family, "wan (default) or hv15 (HunyuanVideo-1.5's VAE)");
  app.add_option("--model", model, "a diffusers AutoencoderKLWan (or AutoencoderKLHunyuanVideo15) directory");
  app.add_option("--random", random, "random weights in real decoder shapes: wan2.2-5b or wan2.1; hv15: hv1.5");
  app.add_option("--config", config,
                 "hv15 --random: the VAE config (default configs/hunyuanvideo1.5-480p-t2v/vae.json)");
  app.add_option("--keep", keep, "with --random: write the checkpoint to this directory and keep it");
  app.add_option("--latent", latent, "latent frames,height,width (default 2,4,4)");
  app.add_option("--warm-latent", warm_latent,
                 "T,H,W: decode a latent of this size first (its time printed), before the first decode");
  app.add_option("--repeat", repeat, "timed decodes (the median is printed)")->check(CLI::PositiveNumber);
  app.add_option("--device", device_arg, "cpu (default) or cuda");
  app.add_option("--conv-math", math_arg, "CUDA fp32 convolutions: tf32 (default) or fp32");
  app.add_option("--dtype", dtype_arg,
                 "decoder activations: fp32 (default), bf16 (cuda), or both (cuda: fp32 then bf16)");
  CLI11_PARSE(app, argc, argv);
  const std::optional<Device> device = parse_device(device_arg);
  if (!device) throw UserError("--device must be cpu or cuda, got '" + device_arg + "'");
  if (math_arg != "tf32" && math_arg != "fp32") throw UserError("--conv-math must be tf32 or fp32, got '" + math_arg + "'");
  if (family != "wan" && family != "hv15") throw UserError("--family must be wan or hv15, got '" + family + "'");
  if (dtype_arg != "fp32" && dtype_arg != "bf16" && dtype_arg != "both")
    throw UserError("--dtype must be fp32, bf16 or both, got '" + dtype_arg + "'");
  const WanVaeConvMath math = math_arg == "tf32" ? WanVaeConvMath::TF32 : WanVaeConvMath::FP32;
  const bool cuda = *device == Device::CUDA;
  if (dtype_arg != "fp32" && !cuda)
    throw UserError("--dtype " + dtype_arg + " needs --device cuda (the CPU VAE is fp32)");
  if (model.empty() == random.empty()) throw UserError("give exactly one of --model and --random");
  if (cuda && cuda_device_count() == 0)  // before any random checkpoint is written
    throw UserError("--device cuda: no CUDA device is visible (" + cuda_device_summary() + ")");
  const auto dims3 = [](const std::string& flag, const std::string& text) {
    std::vector<std::int64_t> v;
    std::stringstream ss(text);
    const std::string bad = flag + " must be T,H,W of positive whole numbers, got '" + text + "'";
    for (std::string part; std::getline(ss, part, ',');) {
      std::size_t used = 0;
      try {
        v.push_back(std::stoll(part, &used));
      } catch (const std::exception&) {
        throw UserError(bad);
      }
      if (used != part.size()) throw UserError(bad);
    }
    if (v.size() != 3 || *std::min_element(v.begin(), v.end()) < 1) throw UserError(bad);
    return v;
  };
  const std::vector<std::int64_t> tl = dims3("--latent", latent);
  const std::vector<std::int64_t> warm_tl =
      warm_latent.empty() ? std::vector<std::int64_t>{} : dims3("--warm-latent", warm_latent);

  std::string dir = model;
  const std::string tmp =
      keep.empty() ? (std::filesystem::temp_directory_path() / "dattn_wan_vae_bench").string() : keep;
  const auto t0 = std::chrono::steady_clock::now();
  if (!random.empty()) {
    dir = tmp;
    if (family == "wan") {
      write_random_wan_vae_decoder(dir, preset(random), 1);
    } else {
      if (random != "hv1.5") throw UserError("--family hv15 --random must be hv1.5, got '" + random + "'");
      RandomCheckpointOptions o;
      o.seed = 1;
      write_random_checkpoint(config, dir, o);
    }
  }
  const double written = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<DType> dtypes;
  if (dtype_arg != "bf16") dtypes.push_back(DType::F32);
  if (dtype_arg != "fp32") dtypes.push_back(DType::BF16);
  std::vector<Timing> runs;
  Decoder d;
  for (DType dt : dtypes)
    runs.push_back(time_decode(family, dir, *device, dt, math, tl, warm_tl, repeat, dtypes.size() > 1, &d));
  if (!random.empty() && keep.empty()) std::filesystem::remove_all(tmp);

  std::printf("%s device=%s", d.describe.c_str(), cuda ? "cuda" : "cpu");
  if (cuda)
    std::printf(" (%s) conv_math=%s\n", cuda_device_summary().c_str(), math_arg.c_str());
  else
    std::printf(" threads=%d\n", omp_get_max_threads());
  std::printf("latent %s -> video %s\n", shape_str(d.latent).c_str(), shape_str(runs.front().out).c_str());
  if (!random.empty()) std::printf("random checkpoint written in %.2f s\n", written);
  for (std::size_t i = 0; i < runs.size(); ++i)
    print_timing(dtypes[i] == DType::BF16 ? "bf16" : (cuda && math == WanVaeConvMath::TF32 ? "fp32 tf32" : "fp32"),
                 runs[i], d, repeat, tl[0], cuda);
  if (runs.size() == 2) {
    const std::vector<double> a = runs[0].video.to_f64_vector(), b = runs[1].video.to_f64_vector();
    double err2 = 0, ref2 = 0, max_abs = 0;
    std::size_t nonfinite = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!std::isfinite(b[i])) {
        ++nonfinite;
        continue;
      }
      err2 += (b[i] - a[i]) * (b[i] - a[i]);
      ref2 += a[i] * a[i];
      max_abs = std::max(max_abs, std::abs(b[i] - a[i]));
    }
    std::printf("bf16 vs fp32: %.2fx faster, rel L2 %.3g, max abs %.3g, %zu NaN/Inf\n", runs[0].median / runs[1].median,
                std::sqrt(err2 / std::max(ref2, 1e-300)), max_abs, nonfinite);
  }
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
