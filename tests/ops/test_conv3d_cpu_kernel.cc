// The CPU convolution kernel (ops/cpu/conv3d.h) against a float64 direct convolution on fresh random
// channels-last inputs: causal zero frames, spatial padding, banded im2col (a tiny scratch budget), the
// time-only and pointwise paths, and the threaded tiles. Outputs live in NaN-poisoned buffers with guard
// regions, so a missed or stray write is caught.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ops/cpu/conv3d.h"

namespace {

using dattn::ops::cpu::Conv3dGeometry;

struct Case {
  const char* name;
  Conv3dGeometry g;
  int n_in;
  int null_frames;  // leading null (zero) frames, as a causal conv's padding
  std::size_t scratch = dattn::ops::cpu::kConv3dDefaultScratchBytes;
};

Conv3dGeometry geom(int cin, int cout, int kt, int k, int h, int w) {
  Conv3dGeometry g;
  g.cin = cin, g.cout = cout, g.kt = kt, g.k = k, g.h = h, g.w = w;
  return g;
}

// out[t][y][x][co] = bias[co] + sum in[t+dt][y+ky-p][x+kx-p][ci] * W[co][dt][ky][kx][ci], in double.
std::vector<double> reference(const Conv3dGeometry& g, const std::vector<std::vector<float>>& frames,
                              const std::vector<bool>& is_null, const std::vector<float>& w,
                              const std::vector<float>& bias) {
  const int n_out = static_cast<int>(frames.size()) - g.kt + 1, p = (g.k - 1) / 2;
  std::vector<double> out(static_cast<std::size_t>(n_out) * g.h * g.w * g.cout);
  for (int t = 0; t < n_out; ++t)
    for (int y = 0; y < g.h; ++y)
      for (int x = 0; x < g.w; ++x)
        for (int co = 0; co < g.cout; ++co) {
          double acc = bias[co];
          for (int dt = 0; dt < g.kt; ++dt) {
            if (is_null[t + dt]) continue;
            for (int ky = 0; ky < g.k; ++ky)
              for (int kx = 0; kx < g.k; ++kx) {
                const int iy = y + ky - p, ix = x + kx - p;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                for (int ci = 0; ci < g.cin; ++ci)
                  acc += double(frames[t + dt][(static_cast<std::size_t>(iy) * g.w + ix) * g.cin + ci]) *
                         w[(((static_cast<std::size_t>(co) * g.kt + dt) * g.k + ky) * g.k + kx) * g.cin + ci];
              }
          }
          out[((static_cast<std::size_t>(t) * g.h + y) * g.w + x) * g.cout + co] = acc;
        }
  return out;
}

void run_case(const Case& c, std::uint32_t seed) {
  SCOPED_TRACE(c.name);
  const Conv3dGeometry& g = c.g;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> w(static_cast<std::size_t>(g.cout) * g.kt * g.k * g.k * g.cin), bias(g.cout);
  for (auto& v : w) v = normal(rng);
  for (auto& v : bias) v = normal(rng);
  std::vector<std::vector<float>> frames(c.n_in, std::vector<float>(static_cast<std::size_t>(g.cin) * g.h * g.w));
  std::vector<bool> is_null(c.n_in);
  std::vector<const float*> ptrs(c.n_in);
  for (int i = 0; i < c.n_in; ++i) {
    is_null[i] = i < c.null_frames;
    for (auto& v : frames[i]) v = is_null[i] ? 0.0f : normal(rng);
    ptrs[i] = is_null[i] ? nullptr : frames[i].data();
  }

  const int n_out = c.n_in - g.kt + 1;
  const std::size_t plane = static_cast<std::size_t>(g.cout) * g.h * g.w;
  constexpr std::size_t kGuard = 64;
  const float nan = std::numeric_limits<float>::quiet_NaN(), sentinel = 12345.0f;
  std::vector<std::vector<float>> out(n_out, std::vector<float>(plane + 2 * kGuard, sentinel));
  std::vector<float*> out_ptrs(n_out);
  for (int t = 0; t < n_out; ++t) {
    std::fill(out[t].begin() + kGuard, out[t].end() - kGuard, nan);
    out_ptrs[t] = out[t].data() + kGuard;
  }
  dattn::ops::cpu::conv3d_frames(g, w.data(), bias.data(), ptrs.data(), c.n_in, out_ptrs.data(), c.scratch);

  const std::vector<double> ref = reference(g, frames, is_null, w, bias);
  double err2 = 0, ref2 = 0;
  int bad = 0;
  for (int t = 0; t < n_out; ++t) {
    for (std::size_t i = 0; i < kGuard; ++i)
      if (out[t][i] != sentinel || out[t][kGuard + plane + i] != sentinel) ++bad;
    for (std::size_t i = 0; i < plane; ++i) {
      const float v = out[t][kGuard + i];
      if (!std::isfinite(v)) ++bad;
      const double r = ref[t * plane + i];
      err2 += (v - r) * (v - r);
      ref2 += r * r;
    }
  }
  ASSERT_EQ(bad, 0) << "non-finite outputs or guard writes";
  // fp32 accumulation over K = cin * kt * k * k <= 864 terms: ~1e-7 relative; 1e-6 leaves margin and
  // still catches any wrong tap (which costs O(1/sqrt(K)) relative error).
  EXPECT_LT(std::sqrt(err2 / ref2), 1e-6);
}

TEST(Conv3dCpuKernel, MatchesFloat64Reference) {
  const Case cases[] = {
      {"causal 3x3x3, two zero frames", geom(5, 7, 3, 3, 6, 9), 6, 2},
      {"causal 3x3x3, one zero frame", geom(4, 3, 3, 3, 5, 4), 4, 1},
      {"no zero frames, odd sizes", geom(3, 6, 3, 3, 7, 5), 5, 0},
      {"banded im2col (tiny scratch)", geom(6, 5, 3, 3, 11, 13), 5, 2, 1},
      {"bands of 3 rows", geom(6, 5, 3, 3, 11, 13), 4, 0, 3 * 13 * 6 * 27 * 4},
      {"time conv 3x1x1", geom(8, 16, 3, 1, 4, 6), 5, 2},
      {"pointwise 1x1x1", geom(12, 4, 1, 1, 3, 5), 3, 0},
      {"2D 3x3 one frame", geom(4, 8, 1, 3, 8, 10), 1, 0},
      {"5x5 kernel", geom(3, 4, 2, 5, 6, 8), 4, 1},
      {"all taps on zero frames", geom(3, 2, 3, 3, 4, 4), 4, 3},
      // Enough work for the threaded path: tiles split the output channels and the pixels.
      {"threaded, channel tiles", geom(16, 70, 3, 3, 10, 12), 4, 2},
      {"threaded, pixel tiles, bands", geom(12, 40, 3, 3, 30, 37), 3, 1, 8 * 37 * 12 * 27 * 4},
      {"threaded pointwise", geom(96, 80, 1, 1, 20, 30), 2, 0},
  };
  // One thread, and an odd count so that tiles split unevenly.
  for (int threads : {1, 3}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    std::uint32_t seed = 1;
    for (const Case& c : cases) run_case(c, seed++);
    omp_set_num_threads(saved);
  }
}

}  // namespace
