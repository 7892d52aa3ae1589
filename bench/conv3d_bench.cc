// dattn_conv3d_bench: the VAE decoders' causal 3-D convolutions through ops' cuDNN path (bf16 NDHWC data,
// float32 compute type, the algorithm the heuristic picks), one geometry at a time, in TFLOP/s; the Wan2.2-5B
// decoder's geometries by default (frames_in = 2 cached + 4 new frames at the three upper stages).
// bench/conv_probe.py times the same geometries through torch (cuDNN's frontend, heuristic and autotuned).
//
//   build/bench/dattn_conv3d_bench [--iters 20] [--fp32] [--geometry cin,cout,kt,k,frames_in,h,w ...]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include <CLI/CLI.hpp>

#include "dattn/core/device_memory.h"
#include "ops/cuda/conv3d.h"

namespace {

// Normal values (sd 0.05) in the buffer's dtype: the tensor cores' power, hence the clock, depends on the data.
void fill_random(dattn::DeviceBuffer& b, bool fp32, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  const std::size_t n = b.bytes() / (fp32 ? 4 : 2);
  std::vector<float> f(n);
  const std::size_t period = std::min<std::size_t>(n, 1u << 20);  // a random block of 1M values, repeated
  for (std::size_t i = 0; i < period; ++i) f[i] = dist(rng);
  for (std::size_t i = period; i < n; ++i) f[i] = f[i - period];
  if (fp32) return b.upload(f.data(), b.bytes());
  std::vector<std::uint16_t> h(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, &f[i], 4);
    h[i] = static_cast<std::uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);  // round to nearest even
  }
  b.upload(h.data(), b.bytes());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dattn;
  CLI::App app{"the VAE decoders' causal 3-D convolutions on CUDA (ops' cuDNN path), TFLOP/s per geometry"};
  int iters = 20;
  bool fp32 = false;
  std::vector<std::vector<int>> given;
  app.add_option("--iters", iters, "timed calls per geometry")->check(CLI::PositiveNumber);
  app.add_flag("--fp32", fp32, "float32 data (TF32 math) instead of bf16");
  app.add_option("--geometry", given, "cin,cout,kt,k,frames_in,h,w (repeatable; default: the Wan2.2-5B decoder's)")
      ->delimiter(',')
      ->expected(7)
      ->allow_extra_args(false);
  CLI11_PARSE(app, argc, argv);
  // {cin, cout, kt, k, frames_in, h, w}
  std::vector<std::vector<int>> geoms = {
      {1024, 1024, 3, 3, 3, 44, 80},  {1024, 1024, 3, 3, 6, 88, 160}, {1024, 512, 3, 3, 6, 176, 320},
      {512, 512, 3, 3, 6, 176, 320},  {512, 256, 3, 3, 6, 352, 640},  {256, 256, 3, 3, 6, 352, 640},
      {512, 512, 1, 3, 4, 352, 640},  {1024, 1024, 1, 3, 4, 176, 320}};
  if (!given.empty()) geoms = given;
  try {
    for (const auto& v : geoms)
      if (*std::min_element(v.begin(), v.end()) <= 0 || v[4] < v[2])
        throw std::invalid_argument("--geometry: expected positive cin,cout,kt,k,frames_in,h,w with frames_in >= kt");
    std::printf("%-34s %10s %10s\n", "geometry (cin cout kt k T h w)", "ms", "TFLOP/s");
    for (const auto& v : geoms) {
      ops::cuda::ConvGeometry g;
      g.cin = v[0], g.cout = v[1], g.kt = v[2], g.k = v[3], g.frames_in = v[4], g.h = v[5], g.w = v[6];
      g.bf16 = !fp32;
      const std::size_t elt = fp32 ? 4 : 2;
      const std::size_t out_frames = static_cast<std::size_t>(g.frames_in - g.kt + 1);
      DeviceBuffer x(elt * g.cin * g.frames_in * g.h * g.w), w(elt * g.cout * g.cin * g.kt * g.k * g.k),
          y(elt * g.cout * out_frames * g.h * g.w);
      fill_random(x, fp32, 1), fill_random(w, fp32, 2);  // constant data would draw less power than real data
      const auto run = [&] { ops::cuda::conv3d(g, x.get(), w.get(), nullptr, y.get()); };
      for (int i = 0; i < 3; ++i) run();
      device_synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) run();
      device_synchronize();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
      const double flops = 2.0 * g.cin * g.cout * g.kt * g.k * g.k * double(out_frames) * g.h * g.w;
      std::printf("%5d %5d %2d %2d %2d %4d %4d %15.3f %10.1f\n", g.cin, g.cout, g.kt, g.k, g.frames_in, g.h, g.w, ms,
                  flops / ms / 1e9);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dattn_conv3d_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
