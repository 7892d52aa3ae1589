// layer_norm_modulated, gated_residual and the two fused on CUDA: parameters per token through TokenRows.
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/row_norm.cuh"

namespace dattn::ops::cuda {
namespace {

// y = h + x * gate[row(token)], D elements per token; 8 per thread when vec.
__global__ void gated_residual_kernel(const void* h, Elt eh, const void* x, Elt ex, void* y, const float* params,
                                      TokenRows rows, i64 k, i64 gate_k, i64 d, i64 n, bool vec) {
  const i64 stride = i64{gridDim.x} * blockDim.x;
  const i64 first = i64{blockIdx.x} * blockDim.x + threadIdx.x;
  if (vec) {
    for (i64 v = first; v < n / 8; v += stride) {
      const i64 e = v * 8;
      // 32-bit division where it suffices: the 64-bit one is a long software sequence per 8 elements.
      const i64 token = n <= 0x7fffffff ? static_cast<i64>(static_cast<unsigned>(e) / static_cast<unsigned>(d)) : e / d;
      const i64 col = e - token * d;
      const float* gate = params + (i64{rows.row(token)} * k + gate_k) * d + col;
      float a[8], b[8];
      load8<true>(h, eh, e, a);  // streaming: the gate rows stay in L1
      load8<true>(x, ex, e, b);
      const float4 g0 = *reinterpret_cast<const float4*>(gate), g1 = *reinterpret_cast<const float4*>(gate + 4);
      const float g[8] = {g0.x, g0.y, g0.z, g0.w, g1.x, g1.y, g1.z, g1.w};
#pragma unroll
      for (int j = 0; j < 8; ++j) a[j] += b[j] * g[j];
      store8(y, eh, e, a);
    }
    return;
  }
  for (i64 e = first; e < n; e += stride) {
    const i64 token = e / d, col = e - token * d;
    const float g = params[(i64{rows.row(token)} * k + gate_k) * d + col];
    store1(y, eh, e, load1(h, eh, e) + load1(x, ex, e) * g);
  }
}

}  // namespace

namespace {

RowNormArgs modulated_args(const Tensor& x, Tensor y, float eps, const TokenModulation& m, int shift_k,
                           int scale_k) {
  RowNormArgs p;
  p.x = x.data(), p.y = y.data(), p.ex = elt_of(x.dtype());
  p.d = x.dim(-1), p.rows = p.d ? x.numel() / p.d : 0, p.eps = eps;
  p.params = m.params.data_as<float>();
  p.k = static_cast<int>(m.params.dim(1)), p.shift_k = shift_k, p.scale_k = scale_k;
  if (p.rows) p.token_rows = token_rows(m.row_of_token);
  return p;
}

}  // namespace

Tensor layer_norm_modulated(const Tensor& x, float eps, const TokenModulation& m, int shift_k, int scale_k) {
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CUDA);
  launch_row_norm<NormKind::LayerModulated>(modulated_args(x, y, eps, m, shift_k, scale_k), x.dtype(),
                                            "layer_norm_modulated", current_stream());
  return y;
}

namespace {

// The residual sum the fused kernels form before the norm: h + x (* gate), written to `residual`.
void add_residual(RowNormArgs& p, const Tensor& x, const TokenModulation* gate, int gate_k, Tensor& residual) {
  p.res_x = x.data(), p.eres = elt_of(x.dtype()), p.res_out = residual.data();
  if (!gate) return;
  p.res_params = gate->params.data_as<float>();
  p.res_k = static_cast<int>(gate->params.dim(1)), p.res_gate_k = gate_k;
  p.res_rows = token_rows(gate->row_of_token);
}

Tensor residual_of(const Tensor& h, const Tensor& x, const TokenModulation* gate, int gate_k) {
  return gate ? cuda::gated_residual(h, x, *gate, gate_k) : cuda::add(h, x, h.shape(), h.dtype());
}

}  // namespace

ResidualAndNorm residual_layer_norm_modulated(const Tensor& h, const Tensor& x, const TokenModulation* gate, int gate_k,
                                              float eps, const TokenModulation& norm, int shift_k, int scale_k) {
  ResidualAndNorm o{Tensor::empty(h.shape(), h.dtype(), Device::CUDA), Tensor::empty(h.shape(), h.dtype(), Device::CUDA)};
  RowNormArgs p = modulated_args(h, o.normed, eps, norm, shift_k, scale_k);
  if (p.rows == 0) return o;
  add_residual(p, x, gate, gate_k, o.residual);
  set_access_flags(p, h.dtype());
  if (!group_kernel_takes(p)) {  // unaligned views, rows over 4096 or not a multiple of 8: the two ops
    o.residual = residual_of(h, x, gate, gate_k);
    o.normed = cuda::layer_norm_modulated(o.residual, eps, norm, shift_k, scale_k);
    return o;
  }
  launch_row_norm<NormKind::LayerModulated>(p, h.dtype(), "residual_layer_norm_modulated", current_stream());
  return o;
}

ResidualAndNorm residual_layer_norm(const Tensor& h, const Tensor& x, const TokenModulation* gate, int gate_k, float eps,
                                    const Tensor& weight, const Tensor& bias) {
  ResidualAndNorm o{Tensor::empty(h.shape(), h.dtype(), Device::CUDA), Tensor::empty(h.shape(), h.dtype(), Device::CUDA)};
  RowNormArgs p = layer_norm_args(h, o.normed, eps, weight, bias);
  if (p.rows == 0) return o;
  add_residual(p, x, gate, gate_k, o.residual);
  set_access_flags(p, h.dtype());
  if (!group_kernel_takes(p)) {  // as above: the two ops
    o.residual = residual_of(h, x, gate, gate_k);
    o.normed = cuda::layer_norm(o.residual, eps, weight, bias);
    return o;
  }
  launch_row_norm<NormKind::Layer>(p, h.dtype(), "residual_layer_norm", current_stream());
  return o;
}

Tensor gated_residual(const Tensor& h, const Tensor& x, const TokenModulation& m, int gate_k) {
  Tensor y = Tensor::empty(h.shape(), h.dtype(), Device::CUDA);
  const i64 n = h.numel(), d = h.dim(-1);
  if (n == 0) return y;
  const float* params = m.params.data_as<float>();
  // The row kernel when it takes the rows (each row reads the gate row from L1/L2).
  RowNormArgs p;
  p.x = h.data(), p.y = y.data(), p.ex = elt_of(h.dtype()), p.d = d, p.rows = n / d;
  p.res_x = x.data(), p.eres = elt_of(x.dtype()), p.res_out = y.data();
  p.res_params = params, p.res_k = static_cast<int>(m.params.dim(1)), p.res_gate_k = gate_k;
  p.res_rows = token_rows(m.row_of_token);
  set_access_flags(p, h.dtype());
  if (p.rows <= 0x7fffffff && group_kernel_takes(p)) {
    if (!launch_row_norm_block<NormKind::Residual>(p, current_stream()))
      launch_row_norm_group<NormKind::Residual>(p, current_stream());
    check_launch("gated_residual");
    return y;
  }
  // The gate rows start at multiples of D floats: 16-byte aligned when D % 4 == 0 (8 here).
  const bool vec = d % 8 == 0 && can_vec8(h.data(), h.dtype()) && can_vec8(x.data(), x.dtype()) &&
                   can_vec8(y.data(), y.dtype()) && can_vec8(params, DType::F32);
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  gated_residual_kernel<<<grid_for(vec ? n / 8 : n, kThreads), kThreads, 0, stream>>>(
      h.data(), elt_of(h.dtype()), x.data(), elt_of(x.dtype()), y.data(), params, token_rows(m.row_of_token),
      m.params.dim(1), gate_k, d, n, vec);
  check_launch("gated_residual");
  return y;
}

}  // namespace dattn::ops::cuda
