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

namespace dattn::ops {
namespace {

using i64 = std::int64_t;

// Bands with less work run on one thread: there an OpenMP barrier costs more than the work.
constexpr i64 kParallelMinFlops = i64{1} << 20;

void check_geometry(const Conv3dGeometry& g) {
  if (g.cin <= 0 || g.cout <= 0 || g.kt <= 0 || g.kh <= 0 || g.kw <= 0 || g.h <= 0 || g.w <= 0 ||
      g.pad_h < 0 || g.pad_w < 0 || g.out_h() <= 0 || g.out_w() <= 0)
    throw std::invalid_argument("conv3d: invalid geometry cin=" + std::to_string(g.cin) +
                                " cout=" + std::to_string(g.cout) + " k=" + std::to_string(g.kt) + "x" +
                                std::to_string(g.kh) + "x" + std::to_string(g.kw) + " in=" +
                                std::to_string(g.h) + "x" + std::to_string(g.w));
}

// Row (ci, ky, kx) of the im2col matrix of one input frame, for output rows [r0, r0 + nrows): for each
// output pixel of the band, the input value its tap (ky, kx) reads (zero outside the frame).
void im2col_row(const Conv3dGeometry& g, const float* frame, int r0, int nrows, i64 row, float* dst) {
  const int ow = g.out_w();
  const int ci = static_cast<int>(row / (g.kh * g.kw));
  const int ky = static_cast<int>(row / g.kw % g.kh);
  const int kx = static_cast<int>(row % g.kw);
  const float* src_c = frame + i64{ci} * g.h * g.w;
  // Output columns whose input column ox + kx - pad_w lies inside the frame.
  const int x0 = std::max(0, g.pad_w - kx);
  const int x1 = std::min(ow, g.w + g.pad_w - kx);
  for (int oy = r0; oy < r0 + nrows; ++oy) {
    float* d = dst + i64{oy - r0} * ow;
    const int iy = oy + ky - g.pad_h;
    if (iy < 0 || iy >= g.h || x1 <= x0) {
      std::fill(d, d + ow, 0.0f);
      continue;
    }
    std::fill(d, d + x0, 0.0f);
    std::memcpy(d + x0, src_c + i64{iy} * g.w + (x0 + kx - g.pad_w), sizeof(float) * (x1 - x0));
    std::fill(d + x1, d + ow, 0.0f);
  }
}

// One term of an output band: C += A[:, a_col : a_col + k] * B[k, npix] (B row stride ldb).
struct GemmPiece {
  i64 a_col, k;
  const float* b;
  i64 ldb;
};

// The column buffer, kept between calls: a fresh zero-filled vector per call cost more than the tiny
// decoder's GEMMs (page faults and memset).
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

// How to cut a band's [cout, npix] output into GEMM tiles for `threads` threads: tiles of at least 32
// rows and 128 columns (smaller ones lose GEMM efficiency), the grid that keeps the most threads busy
// over whole rounds of tiles, then the one with the fewest (largest) tiles.
std::pair<i64, i64> tile_grid(i64 rows, i64 cols, int threads) {
  std::pair<i64, i64> best = {1, 1};
  double best_use = 0;
  for (i64 n = 1; n <= std::max<i64>(1, std::min<i64>(threads, cols / 128)); ++n)
    for (i64 m = 1; m <= std::max<i64>(1, std::min<i64>(threads, rows / 32)); ++m) {
      const i64 tiles = m * n, rounds = (tiles + threads - 1) / threads;
      const double use = double(tiles) / double(rounds * threads);
      if (use > best_use + 1e-9) best = {m, n}, best_use = use;
    }
  return best;
}

}  // namespace

void conv3d_pack_weight(const float* torch_weight, const Conv3dGeometry& g, float* packed) {
  check_geometry(g);
  const i64 khw = i64{g.kh} * g.kw;
#pragma omp parallel for schedule(static)
  for (int co = 0; co < g.cout; ++co)
    for (int ci = 0; ci < g.cin; ++ci)
      for (int dt = 0; dt < g.kt; ++dt) {
        const float* src = torch_weight + ((i64{co} * g.cin + ci) * g.kt + dt) * khw;
        float* dst = packed + ((i64{co} * g.kt + dt) * g.cin + ci) * khw;
        std::copy(src, src + khw, dst);
      }
}

BlasSingleThread::BlasSingleThread() : previous_(openblas_get_num_threads()) {
  if (previous_ != 1) openblas_set_num_threads(1);
}
BlasSingleThread::~BlasSingleThread() {
  if (previous_ != 1) openblas_set_num_threads(previous_);
}

void conv3d_frames(const Conv3dGeometry& g, const float* packed_weight, const float* bias,
                   const float* const* in_frames, int n_in, float* const* out_frames, std::size_t scratch_bytes) {
  check_geometry(g);
  const int n_out = n_in - g.kt + 1;
  if (n_out <= 0) return;
  const int oh = g.out_h(), ow = g.out_w();
  const i64 plane = i64{oh} * ow;
  const i64 kslab = i64{g.cin} * g.kh * g.kw;  // GEMM depth per input frame
  const i64 lda = kslab * g.kt;
  const bool pointwise = g.kh == 1 && g.kw == 1 && g.pad_h == 0 && g.pad_w == 0;

  // Bands of output rows sized so that the columns of all kt frames fit in the scratch budget.
  const i64 per_row = lda * ow * static_cast<i64>(sizeof(float));
  const int band = pointwise ? oh : static_cast<int>(std::clamp<i64>(static_cast<i64>(scratch_bytes) / per_row, 1, oh));
  float* const col = pointwise ? nullptr : column_scratch(static_cast<std::size_t>(lda * band * ow));

  // OpenMP threads share each band: first its im2col rows, then tiles of its GEMM, each tile a
  // single-threaded sgemm. Mixing OpenMP regions with OpenBLAS's own threads made the two pools spin
  // against each other (5x slower on 2 cores).
  const BlasSingleThread single_blas;
  const int threads = omp_get_max_threads();
  for (int t = 0; t < n_out; ++t) {
    for (int r0 = 0; r0 < oh; r0 += band) {
      const int nrows = std::min(band, oh - r0);
      const i64 npix = i64{nrows} * ow;
      std::vector<int> taps;  // input frames that are not null
      for (int dt = 0; dt < g.kt; ++dt)
        if (in_frames[t + dt]) taps.push_back(dt);
      // Null frames contribute nothing; consecutive column blocks of one band fuse into one GEMM.
      std::vector<GemmPiece> pieces;
      for (int dt : taps) {
        const float* b = pointwise ? in_frames[t + dt] + i64{r0} * ow : col + dt * kslab * npix;
        if (!pointwise && !pieces.empty() && pieces.back().a_col + pieces.back().k == dt * kslab)
          pieces.back().k += kslab;
        else
          pieces.push_back({dt * kslab, kslab, b, pointwise ? plane : npix});
      }
      const i64 work = i64{g.cout} * npix * kslab * static_cast<i64>(taps.size());
      const bool parallel = threads > 1 && work >= kParallelMinFlops;
      // Not a structured binding: the OpenMP region below uses both, and clang before 16 cannot capture one.
      const std::pair<i64, i64> grid = parallel ? tile_grid(g.cout, npix, threads) : std::pair<i64, i64>{1, 1};
      const i64 m_tiles = grid.first, n_tiles = grid.second;
      float* const c_band = out_frames[t] + i64{r0} * ow;

#pragma omp parallel if (parallel)
      {
        if (!pointwise) {
          const i64 rows = kslab * static_cast<i64>(taps.size());
#pragma omp for schedule(static)
          for (i64 r = 0; r < rows; ++r) {
            const int dt = taps[r / kslab];
            im2col_row(g, in_frames[t + dt], r0, nrows, r % kslab, col + (dt * kslab + r % kslab) * npix);
          }
        }
#pragma omp for schedule(static)
        for (i64 tile = 0; tile < m_tiles * n_tiles; ++tile) {
          const i64 m0 = g.cout * (tile / n_tiles) / m_tiles, m1 = g.cout * (tile / n_tiles + 1) / m_tiles;
          const i64 n0 = npix * (tile % n_tiles) / n_tiles, n1 = npix * (tile % n_tiles + 1) / n_tiles;
          for (i64 m = m0; m < m1; ++m) std::fill(c_band + m * plane + n0, c_band + m * plane + n1, bias ? bias[m] : 0.0f);
          for (const GemmPiece& p : pieces)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m1 - m0), static_cast<int>(n1 - n0),
                        static_cast<int>(p.k), 1.0f, packed_weight + m0 * lda + p.a_col, static_cast<int>(lda),
                        p.b + n0, static_cast<int>(p.ldb), 1.0f, c_band + m0 * plane + n0, static_cast<int>(plane));
        }
      }
    }
  }
}

}  // namespace dattn::ops
