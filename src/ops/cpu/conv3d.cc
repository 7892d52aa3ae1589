#include "ops/cpu/conv3d.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dattn::ops::cpu {
namespace {

using i64 = std::int64_t;

// Work below this many multiply-adds runs on one thread: there an OpenMP barrier costs more than the work.
constexpr i64 kParallelMinFlops = i64{1} << 20;

void check_geometry(const Conv3dGeometry& g) {
  if (g.cin <= 0 || g.cout <= 0 || g.kt <= 0 || g.k <= 0 || g.k % 2 == 0 || g.h <= 0 || g.w <= 0)
    throw std::invalid_argument("conv3d: invalid geometry cin=" + std::to_string(g.cin) + " cout=" +
                                std::to_string(g.cout) + " kernel " + std::to_string(g.kt) + "x" +
                                std::to_string(g.k) + "x" + std::to_string(g.k) + " frame " + std::to_string(g.h) +
                                "x" + std::to_string(g.w));
}

// The column buffer, kept between calls: a fresh vector per call cost more than the tiny decoder's GEMMs
// (page faults and memset).
float* column_scratch(std::size_t floats) {
  thread_local std::unique_ptr<float[]> buffer;
  thread_local std::size_t capacity = 0;
  if (floats > capacity) {
    buffer.reset();
    buffer.reset(new float[floats]);
    capacity = floats;
  }
  return buffer.get();
}

// How to cut an [rows, cols] GEMM output into tiles for `threads` threads: tiles of at least 128 rows
// (pixels) and 32 columns (channels), the grid that keeps the most threads busy over whole rounds of
// tiles, then the one with the fewest (largest) tiles.
std::pair<i64, i64> tile_grid(i64 rows, i64 cols, int threads) {
  std::pair<i64, i64> best = {1, 1};
  double best_use = 0;
  for (i64 m = 1; m <= std::max<i64>(1, std::min<i64>(threads, rows / 128)); ++m)
    for (i64 n = 1; n <= std::max<i64>(1, std::min<i64>(threads, cols / 32)); ++n) {
      const i64 tiles = m * n, rounds = (tiles + threads - 1) / threads;
      const double use = double(tiles) / double(rounds * threads);
      if (use > best_use + 1e-9) best = {m, n}, best_use = use;
    }
  return best;
}

// One GEMM term of an output band: C[npix, cout] += A[npix, k] (row stride lda) · W[:, w_col : w_col + k]ᵀ.
struct Term {
  const float* a;
  i64 lda, w_col, k;
};

// C = bias + sum of the terms, over a grid of tiles shared by the OpenMP threads.
void gemm_band(const Conv3dGeometry& g, const float* weight, const float* bias, const std::vector<Term>& terms,
               i64 npix, float* c, bool parallel, int threads) {
  const i64 ldw = i64{g.kt} * g.k * g.k * g.cin;
  const std::pair<i64, i64> grid = parallel ? tile_grid(npix, g.cout, threads) : std::pair<i64, i64>{1, 1};
  const i64 m_tiles = grid.first, n_tiles = grid.second;
#pragma omp for schedule(static)
  for (i64 tile = 0; tile < m_tiles * n_tiles; ++tile) {
    const i64 m0 = npix * (tile / n_tiles) / m_tiles, m1 = npix * (tile / n_tiles + 1) / m_tiles;
    const i64 n0 = g.cout * (tile % n_tiles) / n_tiles, n1 = g.cout * (tile % n_tiles + 1) / n_tiles;
    for (i64 m = m0; m < m1; ++m)
      for (i64 n = n0; n < n1; ++n) c[m * g.cout + n] = bias ? bias[n] : 0.0f;
    for (const Term& t : terms)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m1 - m0), static_cast<int>(n1 - n0),
                  static_cast<int>(t.k), 1.0f, t.a + m0 * t.lda, static_cast<int>(t.lda),
                  weight + n0 * ldw + t.w_col, static_cast<int>(ldw), 1.0f, c + m0 * g.cout + n0, g.cout);
  }
}

// Columns of output rows [r0, r0 + nrows) for the input frames `frames` (taps first..kt-1): row of pixel
// (oy, ox) holds, tap by tap (dt, ky, kx), the cin channels that tap reads (zeros outside the frame, or
// with `replicate` the nearest edge pixel).
void im2col(const Conv3dGeometry& g, const float* const* frames, int ntaps, int r0, int nrows, float* col) {
  const int pad = (g.k - 1) / 2;
  const i64 row_len = i64{ntaps} * g.k * g.k * g.cin;
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(g.cin);
#pragma omp for schedule(static)
  for (i64 p = 0; p < i64{nrows} * g.w; ++p) {
    const int oy = r0 + static_cast<int>(p / g.w), ox = static_cast<int>(p % g.w);
    float* d = col + p * row_len;
    for (int i = 0; i < ntaps; ++i)
      for (int ky = 0; ky < g.k; ++ky) {
        int iy = oy + ky - pad;
        if (g.replicate) iy = std::clamp(iy, 0, g.h - 1);
        for (int kx = 0; kx < g.k; ++kx, d += g.cin) {
          int ix = ox + kx - pad;
          if (g.replicate) ix = std::clamp(ix, 0, g.w - 1);
          if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w)
            std::memset(d, 0, bytes);
          else
            std::memcpy(d, frames[i] + (i64{iy} * g.w + ix) * g.cin, bytes);
        }
      }
  }
}

}  // namespace

BlasSingleThread::BlasSingleThread() : previous_(openblas_get_num_threads()) {
  if (previous_ != 1) openblas_set_num_threads(1);
}
BlasSingleThread::~BlasSingleThread() {
  if (previous_ != 1) openblas_set_num_threads(previous_);
}

void conv3d_frames(const Conv3dGeometry& g, const float* weight, const float* bias, const float* const* in_frames,
                   int n_in, float* const* out_frames, std::size_t scratch_bytes) {
  check_geometry(g);
  const int n_out = n_in - g.kt + 1;
  if (n_out <= 0) return;
  const i64 plane = i64{g.h} * g.w, kslab = i64{g.k} * g.k * g.cin;
  // Mixing OpenMP regions with OpenBLAS's own threads made the two pools spin against each other (5x
  // slower on 2 cores): OpenMP threads share the im2col and the GEMM tiles, each tile a single-threaded sgemm.
  const BlasSingleThread single_blas;
  const int threads = omp_get_max_threads();
  for (int t = 0; t < n_out; ++t) {
    int first = 0;  // taps that read null frames contribute nothing and lead the window
    while (first < g.kt && !in_frames[t + first]) ++first;
    for (int dt = first; dt < g.kt; ++dt)
      if (!in_frames[t + dt]) throw std::invalid_argument("conv3d: a zero (null) frame after a real one");
    const int ntaps = g.kt - first;
    float* const out = out_frames[t];
    if (g.k == 1) {
      // No spatial taps: each frame is already its own column matrix [pixels, cin].
      std::vector<Term> terms;
      for (int dt = first; dt < g.kt; ++dt) terms.push_back({in_frames[t + dt], g.cin, dt * kslab, kslab});
      const bool parallel = threads > 1 && plane * g.cout * kslab * ntaps >= kParallelMinFlops;
#pragma omp parallel if (parallel)
      gemm_band(g, weight, bias, terms, plane, out, parallel, threads);
      continue;
    }
    // Bands of output rows whose columns fit the scratch budget.
    const i64 row_len = kslab * ntaps, per_row = row_len * g.w * static_cast<i64>(sizeof(float));
    const int band = static_cast<int>(std::clamp<i64>(static_cast<i64>(scratch_bytes) / std::max<i64>(per_row, 1), 1, g.h));
    float* const col = column_scratch(static_cast<std::size_t>(row_len * band * g.w));
    for (int r0 = 0; r0 < g.h; r0 += band) {
      const int nrows = std::min(band, g.h - r0);
      const i64 npix = i64{nrows} * g.w;
      const std::vector<Term> terms = {{col, row_len, first * kslab, row_len}};
      const bool parallel = threads > 1 && npix * g.cout * row_len >= kParallelMinFlops;
#pragma omp parallel if (parallel)
      {
        im2col(g, in_frames + t + first, ntaps, r0, nrows, col);
        gemm_band(g, weight, bias, terms, npix, out + i64{r0} * g.w * g.cout, parallel, threads);
      }
    }
  }
}

}  // namespace dattn::ops::cpu
