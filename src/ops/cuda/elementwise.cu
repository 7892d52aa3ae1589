// add and mul with broadcasting, and dtype conversion. The shapes are first collapsed on the host:
// dimensions of size 1 dropped, neighbours that both operands walk contiguously merged, so the common
// cases (same shape; b repeating over a's rows) become one or two dimensions and the kernel's index
// arithmetic stays small. 8 outputs per thread along the innermost dimension when it allows.
#include <string>
#include <vector>

#include "ops/cuda/common.cuh"
#include "ops/cuda/cuda_ops.h"

namespace dattn::ops::cuda {
namespace {

constexpr int kMaxDims = 8;

// Output dimensions innermost first, with each operand's element stride (0 where it broadcasts).
struct Bcast {
  int nd = 0;
  i64 size[kMaxDims];
  i64 sa[kMaxDims];
  i64 sb[kMaxDims];
};

std::vector<i64> strides_in(const Shape& s, const Shape& out) {
  std::vector<i64> st(out.size(), 0);
  i64 stride = 1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::size_t d = s.size() - 1 - i, od = out.size() - 1 - i;
    st[od] = s[d] == 1 ? 0 : stride;
    stride *= s[d];
  }
  return st;
}

Bcast collapse(const Shape& a, const Shape& b, const Shape& out, const char* op) {
  const auto sa = strides_in(a, out), sb = strides_in(b, out);
  std::vector<i64> size, xa, xb;  // innermost first
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    if (out[d] == 1) continue;
    if (!size.empty() && sa[d] == xa.back() * size.back() && sb[d] == xb.back() * size.back()) {
      size.back() *= out[d];  // the outer dimension continues the inner one for both operands
      continue;
    }
    size.push_back(out[d]), xa.push_back(sa[d]), xb.push_back(sb[d]);
  }
  if (size.size() > kMaxDims)
    throw UserError(std::string(op) + " (cuda): broadcasting " + shape_str(a) + " with " + shape_str(b) + " needs " +
                    std::to_string(size.size()) + " dimensions after merging; the CUDA kernel takes at most " +
                    std::to_string(kMaxDims));
  Bcast p;
  p.nd = static_cast<int>(size.size());
  for (int i = 0; i < p.nd; ++i) p.size[i] = size[i], p.sa[i] = xa[i], p.sb[i] = xb[i];
  return p;
}

enum class Bin { Add, Mul };

template <Bin B>
__device__ __forceinline__ float bin(float x, float y) {
  return B == Bin::Add ? x + y : x * y;
}

// Offsets in a and b of output element `e` (the flat index of an output element).
__device__ __forceinline__ void offsets(const Bcast& p, i64 e, i64& oa, i64& ob) {
  oa = 0, ob = 0;
  for (int d = 0; d < p.nd; ++d) {
    const i64 q = d + 1 < p.nd ? e / p.size[d] : 0;
    const i64 idx = d + 1 < p.nd ? e - q * p.size[d] : e;
    oa += idx * p.sa[d];
    ob += idx * p.sb[d];
    e = q;
  }
}

// vec: 8 outputs per thread; then the innermost size is a multiple of 8 and each operand's innermost
// stride is 1 (8-wide load) or 0 (one value repeated).
template <Bin B>
__global__ void binary_kernel(Bcast p, const void* a, Elt ea, const void* b, Elt eb, void* y, Elt ey, i64 n,
                              bool vec) {
  const i64 stride = i64{gridDim.x} * blockDim.x;
  const i64 first = i64{blockIdx.x} * blockDim.x + threadIdx.x;
  if (vec) {
    for (i64 v = first; v < n / 8; v += stride) {
      i64 oa, ob;
      offsets(p, v * 8, oa, ob);
      float x[8], z[8];
      if (p.sa[0]) load8(a, ea, oa, x);
      else for (int k = 0; k < 8; ++k) x[k] = load1(a, ea, oa);
      if (p.sb[0]) load8(b, eb, ob, z);
      else for (int k = 0; k < 8; ++k) z[k] = load1(b, eb, ob);
#pragma unroll
      for (int k = 0; k < 8; ++k) x[k] = bin<B>(x[k], z[k]);
      store8(y, ey, v * 8, x);
    }
    return;
  }
  for (i64 i = first; i < n; i += stride) {
    i64 oa, ob;
    offsets(p, i, oa, ob);
    store1(y, ey, i, bin<B>(load1(a, ea, oa), load1(b, eb, ob)));
  }
}

template <Bin B>
Tensor binary(const Tensor& a, const Tensor& b, const Shape& shape, DType out_dtype, const char* op) {
  Tensor y = Tensor::empty(shape, out_dtype, Device::CUDA);
  const i64 n = y.numel();
  if (n == 0) return y;
  const Bcast p = collapse(a.shape(), b.shape(), shape, op);
  const bool vec = p.nd >= 1 && p.size[0] % 8 == 0 && p.sa[0] <= 1 && p.sb[0] <= 1 && can_vec8(y.data(), out_dtype) &&
                   can_vec8(a.data(), a.dtype()) && can_vec8(b.data(), b.dtype());
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  binary_kernel<B><<<grid_for(vec ? n / 8 : n, kThreads), kThreads, 0, stream>>>(
      p, a.data(), elt_of(a.dtype()), b.data(), elt_of(b.dtype()), y.data(), elt_of(out_dtype), n, vec);
  check_launch(op);
  return y;
}

__global__ void convert_kernel(const void* x, Elt ex, void* y, Elt ey, i64 n) {
  const i64 stride = i64{gridDim.x} * blockDim.x;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    if (ex == Elt::F64 && ey != Elt::F32) {
      // fp64 -> 16-bit: one rounding (through float32 would round twice).
      const double v = static_cast<const double*>(x)[i];
      if (ey == Elt::BF16) static_cast<__nv_bfloat16*>(y)[i] = __double2bfloat16(v);
      else if (ey == Elt::F16) static_cast<__half*>(y)[i] = __double2half(v);
      else static_cast<double*>(y)[i] = v;
    } else if (ey == Elt::F64) {
      static_cast<double*>(y)[i] = ex == Elt::F64 ? static_cast<const double*>(x)[i] : double(load1(x, ex, i));
    } else {
      store1(y, ey, i, load1(x, ex, i));
    }
  }
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Shape& shape, DType out_dtype) {
  return binary<Bin::Add>(a, b, shape, out_dtype, "add");
}

Tensor mul(const Tensor& a, const Tensor& b, const Shape& shape, DType out_dtype) {
  return binary<Bin::Mul>(a, b, shape, out_dtype, "mul");
}

Tensor convert(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor y = Tensor::empty(t.shape(), dtype, Device::CUDA);
  const i64 n = t.numel();
  if (n == 0) return y;
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  convert_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(t.data(), elt_of(t.dtype()), y.data(), elt_of(dtype), n);
  check_launch("convert");
  return y;
}

}  // namespace dattn::ops::cuda
