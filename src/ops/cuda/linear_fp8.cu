// linear_fp8 on CUDA (ops/linear_fp8.h): x quantized per token (quantize_e4m3.cu), one cuBLASLt FP8 GEMM
// (e4m3 x e4m3, float32 accumulation, D in bf16 for a bf16 output else float32, per-tensor scales left
// at 1; the probe bench/fp8_gemm_modes.cu says which forms the GPU takes and how fast), then one kernel applying
// y = fma(acc, sx[m] * sw[n], bias[n]) (and GELU) and rounding once to x's dtype (8 columns per thread
// with 16-byte accesses where the widths allow). The activation may come quantized already
// (Fp8Activation: q, k and v of one input share it). It costs writing and reading the accumulator
// (docs/fp8.md). cuBLASLt's outer-vector scales in the epilogue were measured slower on the
// H200 and declined some shapes: removed (bench/notes/fp8_epilogue.md).
//
// cuBLASLt's FP8 kernels take only the "TN" form: row-major Y = X Wᵀ is column-major Yᵀ = W'ᵀ X' with
// A = W (e4m3, [Kp, Np] column-major, transposed), B = X (e4m3, [Kp, Mp], not transposed), D [Np, Mp].
// Every dimension is padded to 16 (the stored weight, and the activation buffer), as those kernels
// need K and the leading dimensions to be multiples of 16; padded rows and columns are zeros.
//
// The cuBLASLt handle, its 32 MB workspace and the plans are this file's own run-context extension, apart
// from the bf16 linear's (linear.cu), whose plan cache is left exactly as it was.
#include <cublasLt.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/cuda/cublaslt_check.cuh"
#include "dattn/core/run_context.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/e4m3_row.cuh"
#include "ops/cuda/linear_fp8.h"

namespace dattn::ops::cuda {
namespace {

using dattn::cuda::check_cublaslt;
#define DATTN_LT8(call) check_cublaslt((call), "linear_fp8", #call)

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

// Padded dimensions; every operand comes from Tensor::empty (256-byte aligned), so no alignment field.
struct Key {
  i64 mp, np, kp;
  bool bf16_d;  // D in bf16 (for bf16 outputs) or float32
  bool operator<(const Key& o) const { return std::tie(mp, np, kp, bf16_d) < std::tie(o.mp, o.np, o.kp, o.bf16_d); }
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
  DATTN_LT8(cublasLtMatrixLayoutCreate(&p->d, key.bf16_d ? CUDA_R_16BF : CUDA_R_32F, key.np, key.mp, key.np));
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

// D [Mp, Np] (row-major, float32 or bf16) = Xq [Mp, Kp] · Wqᵀ.
void gemm_fp8(const void* xq, const void* wq, void* d, bool bf16_d, i64 mp, i64 np, i64 kp) {
  Lt8& s = lt8();
  const Key key{mp, np, kp, bf16_d};
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

// y[m, n] for m < rows, n < n_out from the padded accumulator (row stride np, float32 or bf16). Block x:
// 4 columns per thread; grid y strides over the rows. For any n_out and dtype; scale8_kernel is the fast form.
__global__ void scale_kernel(const void* acc, Elt ae, i64 rows, i64 n_out, i64 np, const float* sx, const float* sw,
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
    const float s = sx[m];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (n0 + j >= n_out) break;
      float v = fmaf(load1(acc, ae, m * np + n0 + j), __fmul_rn(s, w[j]), b[j]);
      if (gelu) v = gelu_tanh_f(v);
      store1(y, ye, m * n_out + n0 + j, v);
    }
  }
}

// The same arithmetic 8 columns per thread with 16-byte loads and stores: n_out a multiple of 8, y (and
// a bias) 16-byte aligned. Thread t of the grid-stride loop takes chunk t % chunks of row t / chunks.
template <bool Gelu>
__global__ void scale8_kernel(const void* acc, Elt ae, i64 rows, i64 n_out, i64 np, const float* sx, const float* sw,
                              const void* bias, Elt be, bool bias_vec, void* y, Elt ye) {
  const i64 chunks = n_out / 8, total = rows * chunks;
  for (i64 t = i64{blockIdx.x} * blockDim.x + threadIdx.x; t < total; t += i64{gridDim.x} * blockDim.x) {
    const i64 m = t / chunks, n0 = (t % chunks) * 8;
    float a[8], w[8], b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    load8<true>(acc, ae, m * np + n0, a);  // the accumulator is read once: evict first
    load8(sw, Elt::F32, n0, w);
    if (bias) {
      if (bias_vec) {
        load8(bias, be, n0, b);
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) b[j] = load1(bias, be, n0 + j);
      }
    }
    const float s = sx[m];
    float v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      v[j] = fmaf(a[j], __fmul_rn(s, w[j]), b[j]);
      if (Gelu) v[j] = gelu_tanh_f(v[j]);
    }
    store8(y, ye, m * n_out + n0, v);
  }
}

void apply_scales(const void* acc, Elt ae, i64 rows, i64 n_out, i64 np, const float* sx, const float* sw, const Tensor& bias,
                  bool gelu, Tensor& y, cudaStream_t stream) {
  const void* b = bias.defined() ? bias.data() : nullptr;
  const Elt be = bias.defined() ? elt_of(bias.dtype()) : Elt::F32;
  const Elt ye = elt_of(y.dtype());
  if (n_out % 8 == 0 && can_vec8(y.data(), y.dtype())) {
    const bool bias_vec = b && can_vec8(b, bias.dtype());
    constexpr int kThreads = 256;
    constexpr i64 kMaxBlocks = 4096;  // a few waves on any GPU; the loop strides over the rest
    const i64 total = rows * (n_out / 8);
    const unsigned blocks = static_cast<unsigned>(std::min<i64>((total + kThreads - 1) / kThreads, kMaxBlocks));
    if (gelu)
      scale8_kernel<true><<<blocks, kThreads, 0, stream>>>(acc, ae, rows, n_out, np, sx, sw, b, be, bias_vec, y.data(), ye);
    else
      scale8_kernel<false><<<blocks, kThreads, 0, stream>>>(acc, ae, rows, n_out, np, sx, sw, b, be, bias_vec, y.data(), ye);
    return;
  }
  constexpr int kThreads = 128;
  const i64 col_blocks = (n_out + 4 * kThreads - 1) / (4 * kThreads);
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(rows < 65535 ? rows : 65535));
  scale_kernel<<<grid, kThreads, 0, stream>>>(acc, ae, rows, n_out, np, sx, sw, b, be, gelu, y.data(), ye);
}

// linear_fp8_gelu_tanh's output quantized for the next FP8 linear without writing it: one block per row,
// each thread holding up to kChunks chunks of 8 in registers; the output is rounded to its dtype before
// its amax and its division, so the codes and scales are those of quantize_rows_e4m3 on the bf16/fp16
// output. Rows >= rows and columns >= n_out of the padded result are zeros.
template <int kChunks, int kThreads>
__global__ void __launch_bounds__(kThreads, 2) gelu_requantize8_kernel(const void* acc, Elt ae, i64 rows, i64 n_out, i64 np, i64 padded_rows,
                                        const float* sx, const float* sw, const void* bias, Elt be, Elt ye,
                                        std::uint8_t* q, float* scales) {
  __shared__ float scratch[32];
  const i64 chunks = n_out / 8, padded_chunks = np / 8;
  for (i64 r = blockIdx.x; r < padded_rows; r += gridDim.x) {
    uint2* qr = reinterpret_cast<uint2*>(q + r * np);
    if (r >= rows) {
      zero_e4m3_row(padded_chunks, qr);
      continue;  // uniform over the block
    }
    const float s = sx[r];
    uint4 held[kChunks];  // the outputs in their dtype: exact, and a quarter of the registers of floats
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < kChunks; ++j) {
      const i64 c = threadIdx.x + i64{j} * blockDim.x;
      if (c >= chunks) continue;
      float a[8], w[8], b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      load8<true>(acc, ae, r * np + c * 8, a);
      load8(sw, Elt::F32, c * 8, w);
      if (bias) load8(bias, be, c * 8, b);
      float y[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) y[i] = gelu_tanh_f(fmaf(a[i], __fmul_rn(s, w[i]), b[i]));
      held[j] = pack8(ye, y);
      amax = amax8(held[j], ye, amax);
    }
    write_e4m3_row(held, ye, amax, chunks, padded_chunks, qr, scales + r, scratch);
  }
}

constexpr int kRequantizeThreads = 512, kRequantizeChunks = 4;  // outputs up to 16384 wide

// acc [fp8_padded(rows), fp8_padded(out)] = x's codes times the weight's, in bf16 for a bf16 output (half
// the bytes written and read again; ops/linear_fp8.h) else float32.
Tensor accumulate(const Fp8Activation& x, const Fp8Matrix& weight) {
  const i64 mp = fp8_padded(x.rows.rows), np = fp8_padded(weight.rows), kp = fp8_padded(weight.cols);
  const bool bf16_d = x.dtype == DType::BF16;
  Tensor acc = Tensor::empty({mp, np}, bf16_d ? DType::BF16 : DType::F32, Device::CUDA);
  if (kp == 0)  // an empty sum (cuBLASLt does not take K = 0)
    DATTN_CUDA_CHECK(cudaMemsetAsync(acc.data(), 0, acc.numel() * dtype_size(acc.dtype()), current_stream()));
  else
    gemm_fp8(x.rows.values.data(), weight.values.data(), acc.data(), bf16_d, mp, np, kp);
  return acc;
}

}  // namespace

Tensor linear_fp8(const Fp8Activation& x, const Fp8Matrix& weight, const Tensor& bias, bool gelu) {
  const i64 out = weight.rows;
  Shape shape = x.shape;
  shape.back() = out;
  Tensor y = Tensor::empty(shape, x.dtype, Device::CUDA);
  const i64 rows = x.rows.rows;
  if (rows == 0 || out == 0) return y;
  const Tensor acc = accumulate(x, weight);
  apply_scales(acc.data(), elt_of(acc.dtype()), rows, out, acc.dim(1), x.rows.scales.data_as<float>(),
               weight.scales.data_as<float>(), bias, gelu, y, current_stream());
  check_launch("linear_fp8");
  return y;
}

Fp8Activation linear_fp8_gelu_tanh_quantized(const Fp8Activation& x, const Fp8Matrix& weight, const Tensor& bias) {
  const i64 out = weight.rows, rows = x.rows.rows;
  const bool fused = (x.dtype == DType::BF16 || x.dtype == DType::F16) && out % 8 == 0 && out > 0 &&
                     out <= i64{8} * kRequantizeChunks * kRequantizeThreads &&
                     (!bias.defined() || can_vec8(bias.data(), bias.dtype()));
  if (!fused) {
    const Tensor h = linear_fp8(x, weight, bias, true);
    return Fp8Activation{quantize_rows_e4m3(h), h.shape(), h.dtype()};
  }
  Fp8Activation y;
  y.shape = x.shape;
  y.shape.back() = out;
  y.dtype = x.dtype;
  const i64 rp = fp8_padded(rows), np = fp8_padded(out);
  y.rows.rows = rows;
  y.rows.cols = out;
  y.rows.values = Tensor::empty({rp, np}, DType::FP8_E4M3, Device::CUDA);
  y.rows.scales = Tensor::empty({rows}, DType::F32, Device::CUDA);
  if (rp == 0) return y;
  const Tensor acc = accumulate(x, weight);
  const unsigned blocks = static_cast<unsigned>(rp < 65535 * 16 ? rp : 65535 * 16);
  gelu_requantize8_kernel<kRequantizeChunks, kRequantizeThreads><<<blocks, kRequantizeThreads, 0, current_stream()>>>(
      acc.data(), elt_of(acc.dtype()), rows, out, np, rp, x.rows.scales.data_as<float>(),
      weight.scales.data_as<float>(), bias.defined() ? bias.data() : nullptr,
      bias.defined() ? elt_of(bias.dtype()) : Elt::F32, elt_of(x.dtype), y.rows.values.data_as<std::uint8_t>(),
      y.rows.scales.data_as<float>());
  check_launch("linear_fp8_gelu_tanh_quantized");
  return y;
}

}  // namespace dattn::ops::cuda
