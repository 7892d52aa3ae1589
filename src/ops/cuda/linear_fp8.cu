// linear_fp8 on CUDA (ops/linear_fp8.h): x quantized per token (quantize_e4m3.cu), one cuBLASLt FP8 GEMM
// (e4m3 x e4m3, float32 accumulation and float32 D, per-tensor scales left at 1), then one kernel applying
// y = fma(acc, sx[m] * sw[n], bias[n]) (and GELU) and rounding once to x's dtype. It costs writing and
// reading the float32 accumulator (docs/fp8.md). cuBLASLt's outer-vector scales in the epilogue were
// measured slower on the H200 and declined some shapes: removed (bench/results/2026-12-02-h200-wan-forward-fp8-epilogue.md).
//
// cuBLASLt's FP8 kernels take only the "TN" form: row-major Y = X Wᵀ is column-major Yᵀ = W'ᵀ X' with
// A = W (e4m3, [Kp, Np] column-major, transposed), B = X (e4m3, [Kp, Mp], not transposed), D [Np, Mp].
// Every dimension is padded to 16 (the stored weight, and the activation buffer), as those kernels
// need K and the leading dimensions to be multiples of 16; padded rows and columns are zeros.
//
// The cuBLASLt handle, its 32 MB workspace and the plans are this file's own run-context extension, apart
// from the bf16 linear's (linear.cu), whose plan cache is left exactly as it was.
#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

#include "dattn/core/run_context.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/cublaslt_check.cuh"
#include "ops/cuda/linear_fp8.h"

namespace dattn::ops::cuda {
namespace {

#define DATTN_LT8(call) check_cublaslt((call), "linear_fp8", #call)

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

// Padded dimensions; every operand comes from Tensor::empty (256-byte aligned), so no alignment field.
struct Key {
  i64 mp, np, kp;
  bool operator<(const Key& o) const { return std::tie(mp, np, kp) < std::tie(o.mp, o.np, o.kp); }
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

struct Lt8 final : RunContext::Extension {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  cudaStream_t stream = nullptr;
  std::mutex mutex;  // guards plans
  std::map<Key, std::unique_ptr<Plan>> plans;
  ~Lt8() override {
    plans.clear();
    if (workspace) cudaFree(workspace);
    if (handle) cublasLtDestroy(handle);
  }
};
constexpr char kLt8Key = 0;

Lt8& lt8() {
  RunContext& context = current_context(Device::CUDA);
  return context.extension_or<Lt8>(&kLt8Key, [&] {
    auto s = std::make_unique<Lt8>();
    s->stream = static_cast<cudaStream_t>(context.stream());
    DATTN_LT8(cublasLtCreate(&s->handle));
    DATTN_CUDA_CHECK(cudaMalloc(&s->workspace, kWorkspaceBytes));  // as linear.cu: not a DeviceBuffer
    return s;
  });
}

// The plan for `key`.
std::unique_ptr<Plan> make_plan(Lt8& s, const Key& key) {
  auto p = std::make_unique<Plan>();
  DATTN_LT8(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
  DATTN_LT8(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)));
  DATTN_LT8(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof(no_trans)));
  // FAST_ACCUM stays off (the default): Hopper's FP8 tensor cores accumulate in reduced precision and
  // cuBLASLt then promotes the partial sums to float32 regularly; fast accumulation would skip that.
  DATTN_LT8(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_8F_E4M3, key.kp, key.np, key.kp));
  DATTN_LT8(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_8F_E4M3, key.kp, key.mp, key.kp));
  DATTN_LT8(cublasLtMatrixLayoutCreate(&p->d, CUDA_R_32F, key.np, key.mp, key.np));
  cublasLtMatmulPreference_t pref = nullptr;
  DATTN_LT8(cublasLtMatmulPreferenceCreate(&pref));
  const std::uint64_t ws = kWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(s.handle, p->desc, p->a, p->b, p->d, p->d, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0)
    throw std::runtime_error("linear_fp8 (cuda): cuBLASLt has no FP8 algorithm for M=" + std::to_string(key.mp) +
                             " N=" + std::to_string(key.np) + " K=" + std::to_string(key.kp) +
                             " (FP8 GEMMs need compute capability 8.9 or newer): " + cublasLtGetStatusString(st));
  p->algo = result.algo;
  return p;
}

// D [Mp, Np] (row-major, float32) = Xq [Mp, Kp] · Wqᵀ.
void gemm_fp8(const void* xq, const void* wq, float* d, i64 mp, i64 np, i64 kp) {
  Lt8& s = lt8();
  const Key key{mp, np, kp};
  const std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.plans.find(key);
  if (it == s.plans.end()) it = s.plans.emplace(key, make_plan(s, key)).first;
  Plan& p = *it->second;
  const float one = 1.0f, zero = 0.0f;
  DATTN_LT8(cublasLtMatmul(s.handle, p.desc, &one, wq, p.a, xq, p.b, &zero, d, p.d, d, p.d, &p.algo, s.workspace,
                           kWorkspaceBytes, s.stream));
}

// The same GELU as the CPU emulation and activation.cu: x * sigmoid(2u).
__device__ __forceinline__ float gelu_tanh_f(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  const float u = k * (x + 0.044715f * x * x * x);
  return x / (1.0f + expf(-2.0f * u));
}

// y[m, n] for m < rows, n < n_out from the padded accumulator (row stride np). Block x: 4 columns per
// thread (np is a multiple of 16, so the float4 loads are aligned); grid y strides over the rows.
__global__ void scale_kernel(const float* acc, i64 rows, i64 n_out, i64 np, const float* sx, const float* sw,
                             const void* bias, Elt be, bool gelu, void* y, Elt ye) {
  const i64 n0 = (i64{blockIdx.x} * blockDim.x + threadIdx.x) * 4;
  if (n0 >= n_out) return;
  float w[4], b[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const bool in = n0 + j < n_out;
    w[j] = in ? sw[n0 + j] : 0.0f;
    b[j] = in && bias ? load1(bias, be, n0 + j) : 0.0f;
  }
  for (i64 m = blockIdx.y; m < rows; m += gridDim.y) {
    const float4 a = *reinterpret_cast<const float4*>(acc + m * np + n0);
    const float av[4] = {a.x, a.y, a.z, a.w};
    const float s = sx[m];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (n0 + j >= n_out) break;
      float v = fmaf(av[j], __fmul_rn(s, w[j]), b[j]);
      if (gelu) v = gelu_tanh_f(v);
      store1(y, ye, m * n_out + n0 + j, v);
    }
  }
}

}  // namespace

Tensor linear_fp8(const Tensor& x, const Fp8Matrix& weight, const Tensor& bias, bool gelu) {
  const i64 out = weight.rows, in = weight.cols;
  Shape shape = x.shape();
  shape.back() = out;
  Tensor y = Tensor::empty(shape, x.dtype(), Device::CUDA);
  const i64 rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
  if (rows == 0 || out == 0) return y;
  const Fp8Matrix xq = quantize_rows_e4m3(x.reshape({rows, in}));
  const i64 mp = fp8_padded(rows), np = fp8_padded(out), kp = fp8_padded(in);
  Tensor acc = Tensor::empty({mp, np}, DType::F32, Device::CUDA);
  const cudaStream_t stream = current_stream();
  if (kp == 0)  // an empty sum (cuBLASLt does not take K = 0)
    DATTN_CUDA_CHECK(cudaMemsetAsync(acc.data(), 0, acc.numel() * sizeof(float), stream));
  else
    gemm_fp8(xq.values.data(), weight.values.data(), acc.data_as<float>(), mp, np, kp);
  constexpr int kThreads = 128;
  const i64 col_blocks = (out + 4 * kThreads - 1) / (4 * kThreads);
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(rows < 65535 ? rows : 65535));
  scale_kernel<<<grid, kThreads, 0, stream>>>(acc.data_as<float>(), rows, out, np, xq.scales.data_as<float>(),
                                              weight.scales.data_as<float>(), bias.defined() ? bias.data() : nullptr,
                                              bias.defined() ? elt_of(bias.dtype()) : Elt::F32, gelu, y.data(),
                                              elt_of(y.dtype()));
  check_launch("linear_fp8");
  return y;
}

}  // namespace dattn::ops::cuda
