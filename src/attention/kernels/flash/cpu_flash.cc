// CPU FlashAttention: per task (b, h, query block) an online softmax over key blocks. K and V are
// converted to fp32 once per call (K transposed), so the two matrix products of a tile are dense
// fp32 loops over contiguous rows that map onto SIMD registers.
#include "attention/kernels/flash/cpu_flash.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "dattn/core/error.h"

// The build targets baseline x86-64, so the hot loop is compiled three times (AVX-512, AVX2+FMA,
// baseline) and the widest the CPU supports runs; flatten inlines the helpers into each copy.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define DATTN_X86_DISPATCH 1
#endif

namespace dattn::flash {
namespace {

constexpr std::int64_t kLanes = 16;  // columns per register tile; row strides are padded to it
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// kWidth floats as a GCC/Clang vector extension, unaligned access allowed. A tile row of 16 floats is
// one AVX-512, two AVX2 or four SSE vectors; a vector wider than the target's registers compiles
// badly, so each instruction set gets its own width. The width, not the type, is the template
// argument: a template argument would drop the type's alignment attribute.
template <int kWidth>
struct SimdVec {
  typedef float type __attribute__((vector_size(kWidth * sizeof(float)), aligned(alignof(float))));
};

std::int64_t round_up(std::int64_t n, std::int64_t m) { return (n + m - 1) / m * m; }

// C[R x 16] (+)= A[R x K] * B[K x 16], accumulators held in registers across the whole K loop.
template <int kWidth, int R, bool kAccumulate>
inline void gemm_tile(std::int64_t K, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                      float* c, std::int64_t ldc) {
  using Vec = typename SimdVec<kWidth>::type;
  constexpr int kVecs = kLanes / kWidth;
  Vec acc[R][kVecs];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kVecs; ++v)
      acc[r][v] = kAccumulate ? *reinterpret_cast<const Vec*>(c + r * ldc + v * kWidth) : Vec{};
  for (std::int64_t k = 0; k < K; ++k) {
    Vec bk[kVecs];
    for (int v = 0; v < kVecs; ++v) bk[v] = *reinterpret_cast<const Vec*>(b + k * ldb + v * kWidth);
    for (int r = 0; r < R; ++r) {
      const float ark = a[r * lda + k];
      for (int v = 0; v < kVecs; ++v) acc[r][v] += ark * bk[v];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kVecs; ++v) *reinterpret_cast<Vec*>(c + r * ldc + v * kWidth) = acc[r][v];
}

template <int kWidth, int R, bool kAccumulate>
inline void gemm_rows(std::int64_t N, std::int64_t K, const float* a, std::int64_t lda, const float* b,
                      std::int64_t ldb, float* c, std::int64_t ldc) {
  for (std::int64_t col = 0; col < N; col += kLanes)
    gemm_tile<kWidth, R, kAccumulate>(K, a, lda, b + col, ldb, c + col, ldc);
}

// Rows per register tile: 6 x 16 accumulators fill most of the 32 AVX-512 or 16 AVX2 registers;
// SSE's 16 registers hold 2 x 16.
constexpr int tile_rows(int width) { return width == 4 ? 2 : 6; }

// C[M x N] (+)= A[M x K] * B[K x N], row-major; N is a multiple of kLanes (callers pad with zeros).
// Every output element sums over k in order, so results do not depend on the tiling or the width.
template <int kWidth, bool kAccumulate>
inline void gemm(std::int64_t M, std::int64_t N, std::int64_t K, const float* a, std::int64_t lda,
                 const float* b, std::int64_t ldb, float* c, std::int64_t ldc) {
  constexpr int kTileRows = tile_rows(kWidth);
  std::int64_t r = 0;
  for (; r + kTileRows <= M; r += kTileRows)
    gemm_rows<kWidth, kTileRows, kAccumulate>(N, K, a + r * lda, lda, b, ldb, c + r * ldc, ldc);
  const float* ar = a + r * lda;
  float* cr = c + r * ldc;
  switch (M - r) {
    case 5: gemm_rows<kWidth, 5, kAccumulate>(N, K, ar, lda, b, ldb, cr, ldc); break;
    case 4: gemm_rows<kWidth, 4, kAccumulate>(N, K, ar, lda, b, ldb, cr, ldc); break;
    case 3: gemm_rows<kWidth, 3, kAccumulate>(N, K, ar, lda, b, ldb, cr, ldc); break;
    case 2: gemm_rows<kWidth, 2, kAccumulate>(N, K, ar, lda, b, ldb, cr, ldc); break;
    case 1: gemm_rows<kWidth, 1, kAccumulate>(N, K, ar, lda, b, ldb, cr, ldc); break;
    default: break;
  }
}

// exp(x) for x <= 0 (Cephes expf polynomial, about 1 ulp), written so that a loop over it vectorizes
// (std::exp does not without -ffast-math). Arguments below -87 (and -inf) give exactly 0; NaN stays NaN.
inline float exp_nonpositive(float x) {
  const float xc = x > -87.0f ? x : -87.0f;
  // Round xc * log2(e) to the nearest integer with the 1.5 * 2^23 trick (no libm call).
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;  // xc - n * ln 2, in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * (r * r) + r + 1.0f;
  const float two_n = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);
  return x > -87.0f ? er * two_n : (x == x ? 0.0f : x);  // NaN stays NaN
}

// What one task needs: the fp32 K^T / V of its kv head, key validity of its batch item, its key blocks.
struct TaskView {
  std::int64_t rows = 0;  // query rows of this block
  std::int64_t q0 = 0;    // index of the block's first query row (the causal mask compares it with keys)
  bool causal = false;    // query q0 + r sees keys <= q0 + r (seq_q == seq_k)
  std::int64_t head_dim = 0, padded_dim = 0, seq_k = 0, key_block = 0;
  float scale = 1.0f;
  const float* kt = nullptr;              // [key blocks, head_dim, key_block], zero beyond seq_k
  const float* v = nullptr;               // [seq_k, padded_dim], zero beyond head_dim
  const std::uint8_t* valid = nullptr;    // [seq_k]; nullptr: every key is valid
  const std::int32_t* block_valid = nullptr;  // valid keys per key block
  const std::int32_t* blocks = nullptr;
  std::int64_t block_total = 0;
};

// Per-thread buffers: q [query_block, padded_dim], scores [query_block, key_block], out accumulator.
struct Workspace {
  std::vector<float> q, s, o, m, l;
  Workspace(std::int64_t query_block, std::int64_t key_block, std::int64_t padded_dim)
      : q(query_block * padded_dim, 0.0f), s(query_block * key_block), o(query_block * padded_dim),
        m(query_block), l(query_block) {}
};

// The online softmax of one query block over its key blocks; leaves the normalized rows in w.o.
template <int kWidth>
inline void attend_query_block(const TaskView& t, Workspace& w) {
  const std::int64_t rows = t.rows, dp = t.padded_dim, kb = t.key_block;
  std::fill(w.o.begin(), w.o.begin() + rows * dp, 0.0f);
  std::fill(w.m.begin(), w.m.begin() + rows, kNegInf);
  std::fill(w.l.begin(), w.l.begin() + rows, 0.0f);
  float* s = w.s.data();
  for (std::int64_t bi = 0; bi < t.block_total; ++bi) {
    const std::int64_t k0 = std::int64_t{t.blocks[bi]} * kb;
    const std::int64_t n = std::min(kb, t.seq_k - k0);
    if (n <= 0 || t.block_valid[t.blocks[bi]] == 0) continue;  // padding-only blocks contribute nothing
    // Causal: a block wholly after the last query row is skipped; one that crosses the diagonal is
    // masked per element, and its P.V product runs row by row over the keys each row may see, so that
    // a later key's V (NaN included) never meets a weight of 0.
    if (t.causal && k0 > t.q0 + rows - 1) continue;
    const bool diagonal = t.causal && k0 + n - 1 > t.q0;
    const bool all_valid = (t.valid == nullptr || t.block_valid[t.blocks[bi]] == n) && !diagonal;
    gemm<kWidth, false>(rows, round_up(n, kLanes), t.head_dim, w.q.data(), dp, t.kt + k0 * t.head_dim, kb, s, kb);
    for (std::int64_t r = 0; r < rows; ++r) {
      float* sr = s + r * kb;
      float block_max = kNegInf;
      if (all_valid) {
#pragma omp simd reduction(max : block_max)
        for (std::int64_t c = 0; c < n; ++c) {
          sr[c] *= t.scale;
          block_max = sr[c] > block_max ? sr[c] : block_max;  // std::max defeats the vectorizer
        }
      } else {
        const std::uint8_t* valid = t.valid ? t.valid + k0 : nullptr;
        const std::int64_t visible = diagonal ? t.q0 + r - k0 + 1 : n;  // keys c < visible pass the causal mask
        for (std::int64_t c = 0; c < n; ++c) {
          sr[c] = (valid == nullptr || valid[c]) && c < visible ? sr[c] * t.scale : kNegInf;
          block_max = sr[c] > block_max ? sr[c] : block_max;
        }
      }
      float m_new = std::max(w.m[r], block_max);
      if (m_new == kNegInf) {
        // No finite score for this row yet. The vectorised max skips NaN, so a row of NaN scores (a NaN
        // query row) lands here too: it must poison the row, not pass as "no valid key". A NaN m makes
        // alpha, p, l and o NaN below (exp_nonpositive keeps NaN). Rare, so the scan costs nothing.
        bool nan = false;
        for (std::int64_t c = 0; c < n; ++c) nan |= sr[c] != sr[c];
        if (!nan) {  // nothing valid for this row yet: p = 0 keeps the accumulator at 0
          std::fill(sr, sr + n, 0.0f);
          continue;
        }
        m_new = std::numeric_limits<float>::quiet_NaN();
      }
      const float alpha = exp_nonpositive(w.m[r] - m_new);
      float row_sum = 0.0f;
#pragma omp simd reduction(+ : row_sum)
      for (std::int64_t c = 0; c < n; ++c) {
        sr[c] = exp_nonpositive(sr[c] - m_new);
        row_sum += sr[c];
      }
      w.l[r] = w.l[r] * alpha + row_sum;
      w.m[r] = m_new;
      if (alpha != 1.0f) {
        float* o = w.o.data() + r * dp;
#pragma omp simd
        for (std::int64_t d = 0; d < dp; ++d) o[d] *= alpha;
      }
    }
    if (!diagonal) {
      gemm<kWidth, true>(rows, dp, n, s, kb, t.v + k0 * dp, dp, w.o.data(), dp);
      continue;
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t visible = std::min(n, t.q0 + r - k0 + 1);
      if (visible > 0) gemm<kWidth, true>(1, dp, visible, s + r * kb, kb, t.v + k0 * dp, dp, w.o.data() + r * dp, dp);
    }
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    float* o = w.o.data() + r * dp;
    const float l = w.l[r];
    if (l == 0.0f) {
      std::fill(o, o + t.head_dim, 0.0f);  // no valid key: zeros, never NaN
    } else {
      for (std::int64_t d = 0; d < t.head_dim; ++d) o[d] /= l;  // a NaN l (a NaN score) gives a NaN row
    }
  }
}

#ifdef DATTN_X86_DISPATCH
__attribute__((target("arch=x86-64-v4"), flatten)) void attend_avx512(const TaskView& t, Workspace& w) {
  attend_query_block<16>(t, w);
}
__attribute__((target("arch=x86-64-v3"), flatten)) void attend_avx2(const TaskView& t, Workspace& w) {
  attend_query_block<8>(t, w);
}
__attribute__((flatten)) void attend_baseline(const TaskView& t, Workspace& w) { attend_query_block<4>(t, w); }

using AttendFn = void (*)(const TaskView&, Workspace&);
AttendFn pick_attend() {
  if (__builtin_cpu_supports("x86-64-v4")) return attend_avx512;
  if (__builtin_cpu_supports("x86-64-v3")) return attend_avx2;
  return attend_baseline;
}
#endif

void attend_query_block_simd(const TaskView& t, Workspace& w) {
#ifdef DATTN_X86_DISPATCH
  static const AttendFn attend = pick_attend();
  attend(t, w);
#else
  attend_query_block<8>(t, w);
#endif
}

// Key padding resolved once per call: validity per key and the valid count per key block.
struct KeyPadding {
  std::vector<std::uint8_t> valid;        // [B, Sk]; empty when every key is valid
  std::vector<std::int32_t> block_valid;  // [B, key blocks]
};

KeyPadding resolve_key_padding(const AttentionProblem& p, std::int64_t key_block) {
  const std::int64_t B = p.shape.batch, Sk = p.shape.seq_k, nkb = block_count(Sk, key_block);
  KeyPadding pad;
  pad.block_valid.assign(B * nkb, 0);
  if (p.has_key_padding()) pad.valid.resize(B * Sk);
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t j = 0; j < Sk; ++j) {
      const bool ok = p.key_valid(b, j);
      if (!pad.valid.empty()) pad.valid[b * Sk + j] = ok ? 1 : 0;
      pad.block_valid[b * nkb + j / key_block] += ok ? 1 : 0;
    }
  }
  return pad;
}

// A buffer kept by the calling thread between calls: diffusion repeats the same shapes every step, and
// fresh pages for every call cost a quarter of the run time in page faults (measured, S=1024 D=128).
// The price: the thread keeps the largest K/V copy it has made (2 x B*Hkv*Sk*D floats).
class ScratchBuffer {
 public:
  float* get(std::size_t n) {
    if (n > size_) {
      data_.reset(new float[n]);  // uninitialised: every user writes all it reads
      size_ = n;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<float[]> data_;
  std::size_t size_ = 0;
};

// fp32 K^T in key-block tiles [B, Hkv, key blocks, D, key_block] (a tile's rows are contiguous, which
// avoids the cache-set aliasing of long power-of-two strides) and V [B, Hkv, Sk, padded_dim]. The
// conversion writes every element, padding included.
struct KeyValueF32 {
  float* kt = nullptr;
  float* v = nullptr;
};

// V rows of invalid keys are 0: a padding key's weight is 0, and 0 * garbage (NaN) must not reach out.
KeyValueF32 convert_key_values(const AttentionProblem& p, const KeyPadding& pad, std::int64_t key_block,
                               std::int64_t padded_dim) {
  const AttentionShape& sh = p.shape;
  const std::int64_t D = sh.head_dim, Sk = sh.seq_k, H = sh.heads_kv, kb = key_block;
  const std::int64_t nkb = block_count(Sk, kb);
  const std::size_t esize = dtype_size(sh.dtype);
  thread_local ScratchBuffer kt_scratch, v_scratch;
  KeyValueF32 kv;
  kv.kt = kt_scratch.get(sh.batch * H * nkb * D * kb);
  kv.v = v_scratch.get(sh.batch * H * Sk * padded_dim);
  const auto* k_bytes = static_cast<const std::uint8_t*>(p.k);
  const auto* v_bytes = static_cast<const std::uint8_t*>(p.v);
#pragma omp parallel
  {
    std::vector<float> rows(kb * D);
#pragma omp for collapse(3) schedule(static)
    for (std::int64_t b = 0; b < sh.batch; ++b) {
      for (std::int64_t h = 0; h < H; ++h) {
        for (std::int64_t blk = 0; blk < nkb; ++blk) {
          const std::int64_t j0 = blk * kb, n = std::min(kb, Sk - j0);
          float* kt = kv.kt + ((b * H + h) * nkb + blk) * D * kb;
          float* v = kv.v + ((b * H + h) * Sk + j0) * padded_dim;
          for (std::int64_t j = 0; j < n; ++j) {
            const std::size_t offset = static_cast<std::size_t>(((b * Sk + j0 + j) * H + h) * D) * esize;
            to_f32(k_bytes + offset, sh.dtype, rows.data() + j * D, D);
            float* vj = v + j * padded_dim;
            if (pad.valid.empty() || pad.valid[b * Sk + j0 + j]) {
              to_f32(v_bytes + offset, sh.dtype, vj, D);
              std::fill(vj + D, vj + padded_dim, 0.0f);
            } else {
              std::fill(vj, vj + padded_dim, 0.0f);
            }
          }
          for (std::int64_t d = 0; d < D; ++d) {
            for (std::int64_t j = 0; j < n; ++j) kt[d * kb + j] = rows[j * D + d];
            std::fill(kt + d * kb + n, kt + (d + 1) * kb, 0.0f);  // keys past Sk score 0, then are skipped
          }
        }
      }
    }
  }
  return kv;
}

}  // namespace

void flash_attention_cpu(const AttentionProblem& p, const FlashTiling& tiling) {
  const AttentionShape& sh = p.shape;
  if (sh.dtype != DType::F32 && sh.dtype != DType::BF16 && sh.dtype != DType::F16 && sh.dtype != DType::F64)
    throw UserError("flash attention (cpu): dtype " + std::string(dtype_name(sh.dtype)) + " is not a float input type");
  if (tiling.query_block <= 0 || tiling.key_block <= 0 || tiling.key_block % kLanes != 0)
    throw std::invalid_argument("flash attention (cpu): key block must be a positive multiple of 16");
  const std::int64_t B = sh.batch, Sq = sh.seq_q, Sk = sh.seq_k, Hq = sh.heads_q, D = sh.head_dim;
  const std::int64_t group = Hq / sh.heads_kv;
  const std::int64_t qb = tiling.query_block, kb = tiling.key_block;
  const std::int64_t nqb = block_count(Sq, qb), nkb = block_count(Sk, kb);
  const std::int64_t tasks = B * Hq * nqb;
  if (tiling.key_blocks && static_cast<std::int64_t>(tiling.key_blocks->size()) != tasks)
    throw std::invalid_argument("flash attention (cpu): key block lists do not match the query blocks");
  if (tiling.key_blocks)
    for (const KeyBlockList& list : *tiling.key_blocks)
      for (std::int32_t j : list)
        if (j < 0 || j >= nkb) throw std::invalid_argument("flash attention (cpu): key block index out of range");

  const std::int64_t dp = round_up(D, kLanes);
  const KeyPadding pad = resolve_key_padding(p, kb);
  const KeyValueF32 kv = convert_key_values(p, pad, kb, dp);
  KeyBlockList every_block(nkb);
  for (std::int64_t j = 0; j < nkb; ++j) every_block[j] = static_cast<std::int32_t>(j);

  const std::size_t esize = dtype_size(sh.dtype);
  const auto* q_bytes = static_cast<const std::uint8_t*>(p.q);
  auto* out_bytes = static_cast<std::uint8_t*>(p.out);
  const float scale = p.softmax_scale();
#pragma omp parallel
  {
    Workspace w(qb, kb, dp);
#pragma omp for schedule(dynamic)
    for (std::int64_t task = 0; task < tasks; ++task) {
      const std::int64_t b = task / (Hq * nqb), h = task / nqb % Hq, i0 = task % nqb * qb;
      const std::int64_t hkv = h / group;
      const KeyBlockList& blocks = tiling.key_blocks ? (*tiling.key_blocks)[task] : every_block;
      TaskView t;
      t.rows = std::min(qb, Sq - i0);
      t.q0 = i0;
      t.causal = sh.causal();
      t.head_dim = D;
      t.padded_dim = dp;
      t.seq_k = Sk;
      t.key_block = kb;
      t.scale = scale;
      t.kt = kv.kt + (b * sh.heads_kv + hkv) * nkb * D * kb;
      t.v = kv.v + (b * sh.heads_kv + hkv) * Sk * dp;
      t.valid = pad.valid.empty() ? nullptr : pad.valid.data() + b * Sk;
      t.block_valid = pad.block_valid.data() + b * nkb;
      t.blocks = blocks.data();
      t.block_total = static_cast<std::int64_t>(blocks.size());
      for (std::int64_t r = 0; r < t.rows; ++r) {
        const std::size_t offset = static_cast<std::size_t>(((b * Sq + i0 + r) * Hq + h) * D) * esize;
        to_f32(q_bytes + offset, sh.dtype, w.q.data() + r * dp, D);
      }
      attend_query_block_simd(t, w);
      for (std::int64_t r = 0; r < t.rows; ++r) {
        const std::size_t offset = static_cast<std::size_t>(((b * Sq + i0 + r) * Hq + h) * D) * esize;
        from_f32(w.o.data() + r * dp, sh.dtype, out_bytes + offset, D);
      }
    }
  }
}

}  // namespace dattn::flash
