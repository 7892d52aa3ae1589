#pragma once
// What the row-norm kernels share: their arguments (RowNormArgs), where a row is written, the parameter
// rows a row reads (modulation, residual gate) and the per-8-elements steps after the reductions
// (parameters, the norm's affine part, the rotary embedding). The kernels are in row_norm.cuh and
// row_norm_lean.cuh.
#include "ops/cuda/common.cuh"
#include "ops/cuda/token_rows.cuh"

namespace dattn::ops::cuda {

// Residual: no norm, only the residual sum written (the group kernel's gated_residual; y is not written).
enum class NormKind { Layer, Rms, LayerModulated, Residual };

struct RowNormArgs {
  const void* x = nullptr;
  void* y = nullptr;
  Elt ex = Elt::F32;  // x and y share the dtype
  i64 rows = 0, d = 0;
  float eps = 0;
  const void* w = nullptr;  // Layer: weight and bias or neither; Rms: weight or none (any float dtype)
  const void* b = nullptr;
  Elt ew = Elt::F32, eb = Elt::F32;
  const float* params = nullptr;  // LayerModulated: [R, K, D] float32
  int k = 0, shift_k = 0, scale_k = 0;
  TokenRows token_rows;
  // Rms only: the interleaved rotary embedding after the norm (rope.h's formula), or none. Row r is
  // token (r / rope_rows_per_token) % rope_s; column c of the row uses the tables' column c % rope_d.
  const float* rope_cos = nullptr;
  const float* rope_sin = nullptr;
  i64 rope_s = 1, rope_rows_per_token = 1, rope_d = 0;
  // The residual before the norm (group kernel only): the row normalised is sum = x + res_x * gate, with
  // gate = res_params[res_rows.row(r), res_gate_k] ([R, res_k, D] float32) or 1 when res_params is null,
  // rounded to x's dtype and written to row r of res_out.
  const void* res_x = nullptr;
  Elt eres = Elt::F32;
  void* res_out = nullptr;
  const float* res_params = nullptr;
  int res_k = 0, res_gate_k = 0;
  TokenRows res_rows;
  // Where row r is written: row r of y, or, with in_item_rows > 0 (a RowWindow), row
  // (r / in_item_rows) * out_item_rows + out_row0 + r % in_item_rows.
  i64 in_item_rows = 0, out_item_rows = 0, out_row0 = 0;
  bool vec = false;    // 8-wide access (d % 8 == 0, aligned x and y)
  bool cached = false; // the row is kept in shared memory (d floats of dynamic shared memory)
  bool w_vec = false;  // 8-wide weight (and bias) loads
};

// A layer norm of x's rows into y (of x's shape and dtype), with weight and bias when defined.
inline RowNormArgs layer_norm_args(const Tensor& x, Tensor y, float eps, const Tensor& weight, const Tensor& bias) {
  RowNormArgs p;
  p.x = x.data(), p.y = y.data(), p.ex = elt_of(x.dtype());
  p.d = x.dim(-1), p.rows = p.d ? x.numel() / p.d : 0, p.eps = eps;
  if (weight.defined()) p.w = weight.data(), p.ew = elt_of(weight.dtype());
  if (bias.defined()) p.b = bias.data(), p.eb = elt_of(bias.dtype());
  return p;
}

// The first element of row r's output.
__device__ __forceinline__ i64 out_base(const RowNormArgs& p, i64 r) {
  if (p.in_item_rows == 0) return r * p.d;
  return ((r / p.in_item_rows) * p.out_item_rows + p.out_row0 + r % p.in_item_rows) * p.d;
}

// Elements [i, i + 8) of a parameter vector: 8-wide when allowed, else one by one (fp64 weights).
__device__ __forceinline__ void load8_param(const void* p, Elt e, i64 i, bool vec, float (&v)[8]) {
  if (vec) {
    load8(p, e, i, v);
    return;
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) v[j] = load1(p, e, i + j);
}

__device__ __forceinline__ void load8_f32(const float* p, float (&v)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

// Sum over the G lanes of a group (aligned within the warp; every lane of the warp takes part).
template <int G>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The rotary embedding of 8 normalised elements starting at column c (a multiple of 8) of row r.
// 32-bit index math: rows < 2^31 (launch_row_norm checks), the tables' sizes and the columns are smaller.
__device__ __forceinline__ void rope8(const RowNormArgs& p, i64 r, i64 c, float (&x)[8]) {
  using u32 = std::uint32_t;
  const i64 pos = u32(r) / u32(p.rope_rows_per_token) % u32(p.rope_s), col = u32(c) % u32(p.rope_d);
  float cv[8], sv[8];
  load8_f32(p.rope_cos + pos * p.rope_d + col, cv);
  load8_f32(p.rope_sin + pos * p.rope_d + col, sv);
#pragma unroll
  for (int j = 0; j < 8; j += 2) {
    const float x1 = x[j], x2 = x[j + 1];
    x[j] = x1 * cv[j] - x2 * sv[j + 1];
    x[j + 1] = x1 * sv[j + 1] + x2 * cv[j];
  }
}

// The same for element c alone, given its normalised value n and its pair partner's, m.
__device__ __forceinline__ float rope1(const RowNormArgs& p, i64 r, i64 c, float n, float m) {
  const i64 pos = r / p.rope_rows_per_token % p.rope_s, col = c % p.rope_d;
  const float* cr = p.rope_cos + pos * p.rope_d;
  const float* sr = p.rope_sin + pos * p.rope_d;
  return col % 2 == 0 ? n * cr[col] - m * sr[col + 1] : m * sr[col] + n * cr[col - 1];
}

// The float32 parameter rows a row reads: the modulation's shift and scale rows (LayerModulated) and the
// residual's gate row (group kernel). Null when unused.
struct ParamRows {
  const float* shift = nullptr;
  const float* scale = nullptr;
  const float* gate = nullptr;
};

__device__ __forceinline__ ParamRows global_param_rows(const RowNormArgs& p, i64 r) {
  ParamRows q;
  if (p.params) {
    const float* prow = p.params + i64{p.token_rows.row(r)} * p.k * p.d;
    q.shift = prow + i64{p.shift_k} * p.d;
    q.scale = prow + i64{p.scale_k} * p.d;
  }
  if (p.res_params) q.gate = p.res_params + (i64{p.res_rows.row(r)} * p.res_k + p.res_gate_k) * p.d;
  return q;
}

// The residual sum of 8 elements at offset e (column c) of the rows, in float32 before rounding: x + res_x *
// gate, or x + res_x without a gate row. Every row-norm kernel forms it here, as gated_residual does, so that a
// fused residual + norm equals the two ops bit for bit. ex, eres: x's and res_x's dtypes (constants fold).
__device__ __forceinline__ void residual_sum8(const RowNormArgs& p, Elt ex, Elt eres, const ParamRows& q, i64 e, i64 c,
                                              float (&a)[8]) {
  float b[8];
  load8<true>(p.x, ex, e, a);
  load8<true>(p.res_x, eres, e, b);
  if (q.gate) {
    float g[8];
    load8_f32(q.gate + c, g);
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] += b[j] * g[j];
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] += b[j];
  }
}

// The parameters of 8 columns: weight and bias (Layer, Rms), or the modulation's shift and scale
// (LayerModulated). Loaded apart from their use so that rows sharing them read them once.
struct Params8 {
  float a[8], b[8];
};

template <NormKind K>
__device__ __forceinline__ void load_params8(const RowNormArgs& p, const ParamRows& q, i64 c, Params8& m) {
  if constexpr (K == NormKind::LayerModulated) {
    load8_f32(q.shift + c, m.a);
    load8_f32(q.scale + c, m.b);
  } else {
    if (p.w) load8_param(p.w, p.ew, c, p.w_vec, m.a);
    if (K == NormKind::Layer && p.b) load8_param(p.b, p.eb, c, p.w_vec, m.b);
  }
}

// Normalised values of 8 elements starting at column c (a multiple of 8) of row r, in place.
template <NormKind K>
__device__ __forceinline__ void apply8(const RowNormArgs& p, const Params8& m, i64 r, i64 c, float mean, float inv,
                                       float (&x)[8]) {
  if constexpr (K == NormKind::LayerModulated) {
#pragma unroll
    for (int j = 0; j < 8; ++j) x[j] = (x[j] - mean) * inv * (1.0f + m.b[j]) + m.a[j];
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float n = (K == NormKind::Rms ? x[j] : x[j] - mean) * inv;
      if (p.w) n *= m.a[j];
      if (K == NormKind::Layer && p.b) n += m.b[j];
      x[j] = n;
    }
    if (K == NormKind::Rms && p.rope_cos) rope8(p, r, c, x);
  }
}

template <NormKind K>
__device__ __forceinline__ void finish8(const RowNormArgs& p, const ParamRows& q, i64 r, i64 c, float mean, float inv,
                                        float (&x)[8]) {
  Params8 m;
  load_params8<K>(p, q, c, m);
  apply8<K>(p, m, r, c, mean, inv, x);
}

}  // namespace dattn::ops::cuda
