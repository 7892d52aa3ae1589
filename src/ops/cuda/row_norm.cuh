#pragma once
// The three row normalisations (layer_norm, rms_norm, layer_norm_modulated), optionally followed by an
// interleaved rotary embedding (rms_norm_rope_interleaved). Two kernels of the same arithmetic:
// - rows of up to 4096 elements with 8-wide access (every row of the models): a group of G <= 32 lanes
//   of one warp per row (G = D / 8 rounded up to a power of two), the row held in registers (packed in
//   its 16-bit dtype when it has one: half the registers, twice the warps per SM), reductions by shuffles
//   only. Short rows (the per-head q/k norms: D = 128, G = 16) pack several rows per warp; one block per
//   row would leave most of each block idle. This kernel can also form the row as a residual sum first
//   (h + x * gate, rounded to the dtype and written out), so a gated residual and the norm after it
//   read the stream once.
// - other rows: one block per row, the row read once into shared memory as float32 (when it fits),
//   written from there; rows too long for shared memory are read again from global memory (L2).
// Both reduce the mean and then the variance in two passes (no one-pass cancellation on rows with a
// large mean). The block kernels for rows of 65..1024 vectors (one block per row, or R rows a block) and the
// choice among them and the lean kernel (row_norm_lean.cuh) follow below.
#include <stdexcept>

#include "ops/cuda/row_norm_args.cuh"
#include "ops/cuda/row_norm_lean.cuh"

namespace dattn::ops::cuda {

// 8 elements of a row in registers: packed in the 16-bit dtype (Half) or as floats.
template <bool Half>
struct Vec8 {
  uint4 raw;
  __device__ __forceinline__ void load(const void* p, Elt, i64 i) {
    raw = __ldcs(reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(p) + i));  // see load8
  }
  __device__ __forceinline__ void store(void* p, Elt, i64 i) const {
    *reinterpret_cast<uint4*>(static_cast<std::uint16_t*>(p) + i) = raw;
  }
  __device__ __forceinline__ void get(Elt e, float (&v)[8]) const { unpack8(raw, e, v); }
  // Rounds to the dtype (nearest even).
  __device__ __forceinline__ void set(Elt e, const float (&v)[8]) { raw = pack8(e, v); }
};

template <>
struct Vec8<false> {
  float f[8];
  __device__ __forceinline__ void load(const void* p, Elt e, i64 i) { load8<true>(p, e, i, f); }
  __device__ __forceinline__ void store(void* p, Elt e, i64 i) const { store8(p, e, i, f); }
  __device__ __forceinline__ void get(Elt, float (&v)[8]) const {
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = f[j];
  }
  __device__ __forceinline__ void set(Elt, const float (&v)[8]) {
#pragma unroll
    for (int j = 0; j < 8; ++j) f[j] = v[j];
  }
};

// This thread's part of a row's sum over its vectors lane, lane + lanes, ... (up to V, below nvec): of the
// values, or of their squared distances from `mean` (squares; mean 0 for the RMS norm).
template <int V, bool Half>
__device__ __forceinline__ float part_sum(const Vec8<Half> (&x)[V], Elt ex, i64 lane, int lanes, i64 nvec, bool squares,
                                          float mean) {
  float s = 0;
#pragma unroll
  for (int j = 0; j < V; ++j)
    if (lane + i64{j} * lanes < nvec) {
      float f[8];
      x[j].get(ex, f);
#pragma unroll
      for (int e = 0; e < 8; ++e) s += squares ? (f[e] - mean) * (f[e] - mean) : f[e];
    }
  return s;
}

// Vector v of row r as the kernel normalises it: x's elements, or the residual sum (also written out).
template <bool Half>
__device__ __forceinline__ void load_row_vec(const RowNormArgs& p, const ParamRows& q, i64 r, i64 v, bool write,
                                             Vec8<Half>& out) {
  const i64 e = r * p.d + v * 8;
  if (!p.res_x) {
    out.load(p.x, p.ex, e);
    return;
  }
  float a[8];
  residual_sum8(p, p.ex, p.eres, q, e, v * 8, a);
  out.set(p.ex, a);
  if (write) out.store(p.res_out, p.ex, e);
}

// One row normalised by `lanes` threads: this one holds vectors lane, lane + lanes, ... (up to V), and
// `reduce` sums a value over the row's threads (all of them must call it). `real`: false for a thread
// that only repeats a row to take part in the reductions (it writes nothing).
template <NormKind K, int V, bool Half, class Reduce>
__device__ __forceinline__ void norm_row(const RowNormArgs& p, i64 r, bool real, int lane, int lanes, Reduce reduce) {
  const i64 nvec = p.d / 8;
  const float inv_d = 1.0f / static_cast<float>(p.d);
  const ParamRows q = global_param_rows(p, r);
  Vec8<Half> x[V];
  float s = 0;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const i64 v = lane + i64{j} * lanes;
    if (v < nvec) {
      load_row_vec(p, q, r, v, real, x[j]);
      float f[8];
      x[j].get(p.ex, f);
#pragma unroll
      for (int e = 0; e < 8; ++e) s += K == NormKind::Rms ? f[e] * f[e] : f[e];
    }
  }
  if constexpr (K == NormKind::Residual) return;
  float mean = 0, inv;
  if (K == NormKind::Rms) {
    inv = 1.0f / sqrtf(reduce(s) * inv_d + p.eps);
  } else {
    mean = reduce(s) * inv_d;
    inv = 1.0f / sqrtf(reduce(part_sum(x, p.ex, lane, lanes, nvec, true, mean)) * inv_d + p.eps);
  }
  if (!real) return;
  const i64 obase = out_base(p, r);
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const i64 v = lane + i64{j} * lanes;
    if (v < nvec) {
      float f[8];
      x[j].get(p.ex, f);
      finish8<K>(p, q, r, v * 8, mean, inv, f);
      store8(p.y, p.ex, obase + v * 8, f);
    }
  }
}

// G lanes per row, up to V vectors of 8 per lane (lane l holds vectors l, l + G, ...: coalesced). Staging
// the float32 parameter rows in shared memory for blocks of 16 rows was measured slower on the H200
// (bench/notes/hunyuanvideo15.md, fourth set): they are read from L1/L2 per row.
template <NormKind K, int G, int V, bool Half>
__global__ void row_norm_group_kernel(RowNormArgs p) {
  const i64 row = i64{blockIdx.x} * (blockDim.x / G) + threadIdx.x / G;
  const i64 r = row < p.rows ? row : p.rows - 1;  // idle groups repeat the last row: shuffles need every lane
  norm_row<K, V, Half>(p, r, row < p.rows, threadIdx.x % G, G, [](float v) { return group_sum<G>(v); });
}

// Rows of 65..1024 vectors of 8: one block per row, thread t holding vectors t, t + blockDim.x, ... (up
// to V). The group kernel's one warp per row holds 12 vectors a lane at D = 3072 (88 registers, 20 warps
// an SM) and ran the norms at 43-59% of the copy rate; many small threads keep more loads in flight.
template <NormKind K, int V, bool Half>
__global__ void __launch_bounds__(512) row_norm_block_kernel(RowNormArgs p) {
  __shared__ float scratch[32];
  norm_row<K, V, Half>(p, blockIdx.x, true, threadIdx.x, blockDim.x, [&](float v) { return block_sum(v, scratch); });
}

// R sums over the block at once: one pair of barriers for all of them (block_reduce's pattern; `scratch`
// holds R x 32 floats, and a second call needs no barrier before it: this one starts with one).
template <int R>
__device__ __forceinline__ void block_sums(float (&v)[R], float (*scratch)[32]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
  __syncthreads();
  if (lane == 0)
#pragma unroll
    for (int i = 0; i < R; ++i) scratch[i][warp] = v[i];
  __syncthreads();
#pragma unroll
  for (int i = 0; i < R; ++i) {
    v[i] = lane < warps ? scratch[i][lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
  }
}

// row_norm_block_kernel over R rows a block (rows R blockIdx.x ..): each thread issues its loads of all R
// rows before the first reduction (R times the bytes in flight of one row a block), the R rows' sums share
// their barriers, and each weight, bias or modulation vector is read once for the R rows when they share it
// (the modulation row: consecutive tokens of one item). The same threads, vectors and reduction tree per row
// as row_norm_block_kernel with V vectors a thread, so the same results. The plain norms' default with R = 2
// (launch_row_norm_block); its extra registers cost the modulated and residual forms more than it saves them.
template <NormKind K, int V, int R, bool Half>
__global__ void __launch_bounds__(512) row_norm_block_rows_kernel(RowNormArgs p) {
  __shared__ float scratch[R][32];
  const i64 nvec = p.d / 8, first = i64{blockIdx.x} * R;
  const int lane = threadIdx.x, lanes = blockDim.x;
  // Rows past the end repeat the last row (every thread takes part in the reductions) and write nothing.
  const auto row = [&](int i) { return first + i < p.rows ? first + i : p.rows - 1; };
  Vec8<Half> x[R][V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const i64 v = lane + i64{j} * lanes;
    if (v < nvec)
#pragma unroll
      for (int i = 0; i < R; ++i) load_row_vec(p, global_param_rows(p, row(i)), row(i), v, first + i < p.rows, x[i][j]);
  }
  float s[R];
#pragma unroll
  for (int i = 0; i < R; ++i) s[i] = part_sum(x[i], p.ex, lane, lanes, nvec, K == NormKind::Rms, 0.0f);
  if constexpr (K == NormKind::Residual) return;
  const float inv_d = 1.0f / static_cast<float>(p.d);
  float mean[R], inv[R];
  block_sums<R>(s, scratch);
  if (K == NormKind::Rms) {
#pragma unroll
    for (int i = 0; i < R; ++i) mean[i] = 0, inv[i] = 1.0f / sqrtf(s[i] * inv_d + p.eps);
  } else {
    float qsum[R];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      mean[i] = s[i] * inv_d;
      qsum[i] = part_sum(x[i], p.ex, lane, lanes, nvec, true, mean[i]);
    }
    block_sums<R>(qsum, scratch);
#pragma unroll
    for (int i = 0; i < R; ++i) inv[i] = 1.0f / sqrtf(qsum[i] * inv_d + p.eps);
  }
  // The same modulation row for all R rows (one check, the same in every thread of the block).
  bool shared = true;
  if (K == NormKind::LayerModulated)
#pragma unroll
    for (int i = 1; i < R; ++i) shared = shared && p.token_rows.row(row(i)) == p.token_rows.row(row(0));
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const i64 v = lane + i64{j} * lanes;
    if (v >= nvec) continue;
    Params8 m;
    load_params8<K>(p, global_param_rows(p, row(0)), v * 8, m);
#pragma unroll
    for (int i = 0; i < R; ++i) {
      if (first + i >= p.rows) continue;
      if (i > 0 && !shared) load_params8<K>(p, global_param_rows(p, row(i)), v * 8, m);
      float f[8];
      x[i][j].get(p.ex, f);
      apply8<K>(p, m, row(i), v * 8, mean[i], inv[i], f);
      store8(p.y, p.ex, out_base(p, row(i)) + v * 8, f);
    }
  }
}

template <NormKind K>
__global__ void row_norm_kernel(RowNormArgs p) {
  extern __shared__ float row_cache[];
  __shared__ float scratch[32];
  const i64 r = blockIdx.x;
  const i64 base = r * p.d;
  const int tid = threadIdx.x, nt = blockDim.x;
  const auto value = [&](i64 i) { return p.cached ? row_cache[i] : load1(p.x, p.ex, base + i); };

  // Pass 1: the sum (and, cached, the copy into shared memory).
  float s = 0;
  if (p.vec) {
    for (i64 v = tid; v < p.d / 8; v += nt) {
      float x[8];
      load8(p.x, p.ex, base + v * 8, x);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        s += K == NormKind::Rms ? x[j] * x[j] : x[j];
        if (p.cached) row_cache[v * 8 + j] = x[j];
      }
    }
  } else {
    for (i64 i = tid; i < p.d; i += nt) {
      const float x = load1(p.x, p.ex, base + i);
      s += K == NormKind::Rms ? x * x : x;
      if (p.cached) row_cache[i] = x;
    }
  }
  const float total = block_sum(s, scratch);  // its barriers also publish row_cache
  const float inv_d = 1.0f / static_cast<float>(p.d);
  float mean = 0, inv;
  if (K == NormKind::Rms) {
    inv = 1.0f / sqrtf(total * inv_d + p.eps);  // IEEE sqrt and division: rsqrtf is 2 ulp
  } else {
    mean = total * inv_d;
    float q = 0;
    for (i64 i = tid; i < p.d; i += nt) {
      const float c = value(i) - mean;
      q += c * c;
    }
    inv = 1.0f / sqrtf(block_sum(q, scratch) * inv_d + p.eps);
  }

  const i64 obase = out_base(p, r);
  if (p.vec) {
    for (i64 v = tid; v < p.d / 8; v += nt) {
      float x[8];
      if (p.cached) {
#pragma unroll
        for (int j = 0; j < 8; ++j) x[j] = row_cache[v * 8 + j];
      } else {
        load8(p.x, p.ex, base + v * 8, x);
      }
      finish8<K>(p, global_param_rows(p, r), r, v * 8, mean, inv, x);
      store8(p.y, p.ex, obase + v * 8, x);
    }
    return;
  }
  const float* shift = nullptr;
  const float* scale = nullptr;
  if (K == NormKind::LayerModulated) {
    const float* prow = p.params + i64{p.token_rows.row(r)} * p.k * p.d;
    shift = prow + i64{p.shift_k} * p.d;
    scale = prow + i64{p.scale_k} * p.d;
  }
  const auto out = [&](i64 i) {
    float n = (K == NormKind::Rms ? value(i) : value(i) - mean) * inv;
    if (K == NormKind::LayerModulated) return n * (1.0f + scale[i]) + shift[i];
    if (p.w) n *= load1(p.w, p.ew, i);
    if (K == NormKind::Layer && p.b) n += load1(p.b, p.eb, i);
    return n;
  };
  for (i64 i = tid; i < p.d; i += nt) {
    const float y = K == NormKind::Rms && p.rope_cos ? rope1(p, r, i, out(i), out(i ^ 1)) : out(i);
    store1(p.y, p.ex, obase + i, y);
  }
}

template <NormKind K, int G, int V>
void launch_group(const RowNormArgs& p, cudaStream_t stream) {
  // 128 threads: blocks of the 88-register rows (D = 3072) fit 5 to an SM where 256 fit 2.
  constexpr int kThreads = 128, kRowsPerBlock = kThreads / G;
  const auto blocks = static_cast<unsigned>((p.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  if (p.ex == Elt::F32)
    row_norm_group_kernel<K, G, V, false><<<blocks, kThreads, 0, stream>>>(p);
  else
    row_norm_group_kernel<K, G, V, true><<<blocks, kThreads, 0, stream>>>(p);
}

// Whether the group or block kernel takes these rows (8-wide access, up to 4096 elements): the kernels
// that form a residual sum.
inline bool group_kernel_takes(const RowNormArgs& p) { return p.vec && p.d / 8 <= 512; }

// Which kernel takes rows of 65..1024 vectors. Default (Auto): the 2-rows block kernel for the plain norms
// (layer norm, RMS norm without rotary embedding; no residual) and the block kernel with 2 vectors a thread
// for the rest, each the faster of the two for those norms at Wan's and HunyuanVideo-1.5's widths
// (bench/results/2026-12-05-h200-row-norm-rows-stream.md).
// DATTN_ROW_NORM_KERNEL=block2|block1|group|rows2|lean|lean40 puts every norm on one kernel (the block kernel
// with 2 vectors or 1 (rows up to 512 vectors; longer ones take 2), the group kernel (rows up to 512 vectors),
// the 2-rows block kernel, or the lean kernel (lean40: its registers capped at 40) where it takes the rows
// and block2 elsewhere), read once: a benchmark knob.
enum class LongRowKernel { Auto, Block2, Block1, Group, Rows2, Lean, Lean40 };
LongRowKernel long_row_kernel();

// Rows of nvec vectors on blocks of R rows (the block kernel for R = 1), V vectors a thread.
template <NormKind K, int V, int R>
void launch_long_rows(const RowNormArgs& p, cudaStream_t stream) {
  const i64 nvec = p.d / 8;
  const auto threads = static_cast<unsigned>(((nvec + V - 1) / V + 31) / 32 * 32);
  const auto blocks = static_cast<unsigned>((p.rows + R - 1) / R);
  if constexpr (R == 1) {
    if (p.ex == Elt::F32)
      row_norm_block_kernel<K, V, false><<<blocks, threads, 0, stream>>>(p);
    else
      row_norm_block_kernel<K, V, true><<<blocks, threads, 0, stream>>>(p);
  } else {
    if (p.ex == Elt::F32)
      row_norm_block_rows_kernel<K, V, R, false><<<blocks, threads, 0, stream>>>(p);
    else
      row_norm_block_rows_kernel<K, V, R, true><<<blocks, threads, 0, stream>>>(p);
  }
}

template <NormKind K>
bool launch_row_norm_block(const RowNormArgs& p, cudaStream_t stream) {
  const i64 nvec = p.d / 8;
  if (nvec <= 64 || nvec > 1024) return false;
  LongRowKernel choice = long_row_kernel();
  const bool lean = choice == LongRowKernel::Lean || choice == LongRowKernel::Lean40;
  if (lean && lean_kernel_takes<K>(p)) {
    launch_row_norm_lean<K>(p, choice == LongRowKernel::Lean40, stream);
    return true;
  }
  if (lean) choice = LongRowKernel::Block2;
  if (choice == LongRowKernel::Auto) {
    const bool plain = !p.res_x && (K == NormKind::Layer || (K == NormKind::Rms && !p.rope_cos));
    choice = plain ? LongRowKernel::Rows2 : LongRowKernel::Block2;
  }
  switch (choice) {
    case LongRowKernel::Group:
      if (nvec <= 512) return false;
      launch_long_rows<K, 2, 1>(p, stream);
      break;
    case LongRowKernel::Block1:  // at most 512 threads
      nvec <= 512 ? launch_long_rows<K, 1, 1>(p, stream) : launch_long_rows<K, 2, 1>(p, stream);
      break;
    case LongRowKernel::Auto:  // resolved above
    case LongRowKernel::Lean:
    case LongRowKernel::Lean40:
    case LongRowKernel::Block2: launch_long_rows<K, 2, 1>(p, stream); break;
    case LongRowKernel::Rows2: launch_long_rows<K, 2, 2>(p, stream); break;
  }
  return true;
}

// The group kernel for rows of nvec 8-wide vectors (nvec <= 512); false when it does not take them.
template <NormKind K>
bool launch_row_norm_group(const RowNormArgs& p, cudaStream_t stream) {
  const i64 nvec = p.d / 8;
  if (nvec > 512) return false;
  if (nvec <= 1) launch_group<K, 1, 1>(p, stream);
  else if (nvec <= 2) launch_group<K, 2, 1>(p, stream);
  else if (nvec <= 4) launch_group<K, 4, 1>(p, stream);
  else if (nvec <= 8) launch_group<K, 8, 1>(p, stream);
  else if (nvec <= 16) launch_group<K, 16, 1>(p, stream);
  else if (nvec <= 32) launch_group<K, 32, 1>(p, stream);
  else if (nvec <= 64) launch_group<K, 32, 2>(p, stream);
  else if (nvec <= 128) launch_group<K, 32, 4>(p, stream);
  else if (nvec <= 256) launch_group<K, 32, 8>(p, stream);
  else if (nvec <= 384) launch_group<K, 32, 12>(p, stream);
  else launch_group<K, 32, 16>(p, stream);
  return true;
}

// Fills the access flags (vec, w_vec) from the pointers, x's dtype `dtype` and the row length.
inline void set_access_flags(RowNormArgs& p, DType dtype) {
  p.vec = p.d % 8 == 0 && can_vec8(p.x, dtype) && can_vec8(p.y, dtype);
  // 8-wide parameter and table reads start at multiples of 8 columns: aligned when their bases are.
  const auto aligned = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; };
  if (p.params && !aligned(p.params)) p.vec = false;
  if (p.rope_cos && (!aligned(p.rope_cos) || !aligned(p.rope_sin) || p.rope_d % 8 != 0)) p.vec = false;
  if (p.res_x && (!aligned(p.res_x) || !aligned(p.res_out) || p.eres == Elt::F64 || (p.res_params && !aligned(p.res_params))))
    p.vec = false;
  p.w_vec = p.w && p.ew != Elt::F64 && aligned(p.w) && (!p.b || (p.eb != Elt::F64 && aligned(p.b)));
}

// Fills the access flags and the launch shape, then launches on `stream`. A residual sum (res_x) needs
// the group kernel: callers check group_kernel_takes after set_access_flags first.
template <NormKind K>
void launch_row_norm(RowNormArgs p, DType dtype, const char* op, cudaStream_t stream) {
  if (p.rows == 0 || p.d == 0) return;
  if (p.rows > 0x7fffffff) throw UserError(std::string(op) + " (cuda): too many rows");
  set_access_flags(p, dtype);
  if (p.res_x && !group_kernel_takes(p)) throw std::logic_error(std::string(op) + " (cuda): residual rows need the group kernel");
  if (p.vec && (launch_row_norm_block<K>(p, stream) || launch_row_norm_group<K>(p, stream))) {
    check_launch(op);
    return;
  }
  constexpr i64 kMaxCacheBytes = 48 * 1024;  // the default dynamic shared memory limit
  const i64 cache_bytes = p.d * static_cast<i64>(sizeof(float));
  p.cached = cache_bytes <= kMaxCacheBytes;
  // About 4 vectors (32 elements) per thread: D = 5120 gets 160 threads.
  const i64 per_thread = p.vec ? 32 : 8;
  i64 threads = (p.d + per_thread - 1) / per_thread;
  threads = (threads + 31) / 32 * 32;
  threads = threads < 32 ? 32 : (threads > 512 ? 512 : threads);
  row_norm_kernel<K><<<static_cast<unsigned>(p.rows), static_cast<unsigned>(threads),
                       p.cached ? static_cast<std::size_t>(cache_bytes) : 0, stream>>>(p);
  check_launch(op);
}

}  // namespace dattn::ops::cuda
