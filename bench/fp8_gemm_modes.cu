// fp8_gemm_modes: which cuBLASLt FP8 GEMM form is fast on this GPU, against the bf16 GEMM of the same
// shape. A probe for the FP8 linear's design (docs/fp8.md), not part of the engine: it links cuBLASLt only.
//
// Forms, all Y[m, n] = Σ_k X[m, k] W[n, k] in the "TN" layout (D column-major [N, M]), float32 compute:
//   bf16          bf16 x bf16 -> bf16, bias epilogue (the engine's bf16 linear)
//   fp8-f32       e4m3 x e4m3 -> float32, scales 1 (the engine's FP8 GEMM today, a scale kernel after it)
//   fp8-tensor    e4m3 x e4m3 -> bf16, per-tensor A and B scales (device scalars), bias epilogue
//   fp8-rowalpha  e4m3 x e4m3 -> bf16, alpha a device vector over D's rows (= output channels: the
//                 weight's per-channel scale), the activation's per-tensor scale as B's scale, bias
//   fp8-*-fast    the same with CUBLASLT_MATMUL_DESC_FAST_ACCUM on
// For each: whether cuBLASLt has an algorithm, then the best of its top algorithms by measured time.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

struct Shape {
  const char* name;
  long m, n, k;
};

struct Form {
  std::string name;
  bool fp8;
  cudaDataType_t d_type;
  bool tensor_scales;
  bool row_alpha;
  bool fast_accum;
  bool bias;
};

__global__ void fill_kernel(std::uint8_t* p, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    // bytes that are finite small values in both e4m3 and (pairwise) bf16: clear the exponent's top bits
    p[i] = static_cast<std::uint8_t>(h & 0xB7u);
  }
}

double time_algo(cublasLtHandle_t lt, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                 cublasLtMatrixLayout_t la, const void* b, cublasLtMatrixLayout_t lb, void* d,
                 cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t* algo, void* ws, std::size_t ws_bytes,
                 cudaStream_t stream) {
  const float zero = 0.0f;
  const void* beta = &zero;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int i = 0; i < 3; ++i) {
    const cublasStatus_t st = cublasLtMatmul(lt, desc, alpha, a, la, b, lb, beta, d, ld, d, ld, algo, ws, ws_bytes, stream);
    if (st != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "matmul: %s\n", cublasLtGetStatusString(st));
      return -1.0;
    }
  }
  constexpr int kReps = 20;
  cudaEventRecord(e0, stream);
  for (int i = 0; i < kReps; ++i)
    cublasLtMatmul(lt, desc, alpha, a, la, b, lb, beta, d, ld, d, ld, algo, ws, ws_bytes, stream);
  cudaEventRecord(e1, stream);
  cudaEventSynchronize(e1);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ms / kReps;
}

}  // namespace

int main() {
  const Shape shapes[] = {
      {"wan5b qkv/o 11440x3072x3072", 11440, 3072, 3072},
      {"wan5b ffn1 11440x14336x3072", 11440, 14336, 3072},
      {"wan5b ffn2 11440x3072x14336", 11440, 3072, 14336},
      {"wan5b cross kv 512x3072x4096", 512, 3072, 4096},
  };
  const Form forms[] = {
      {"bf16", false, CUDA_R_16BF, false, false, false, true},
      {"fp8-f32", true, CUDA_R_32F, false, false, false, false},
      {"fp8-bf16", true, CUDA_R_16BF, false, false, false, false},
      {"fp8-bf16-bias", true, CUDA_R_16BF, false, false, false, true},
      {"fp8-bf16-scales", true, CUDA_R_16BF, true, false, false, false},
      {"fp8-tensor", true, CUDA_R_16BF, true, false, false, true},
      {"fp8-rowalpha", true, CUDA_R_16BF, true, true, false, true},
      {"fp8-tensor-fast", true, CUDA_R_16BF, true, false, true, true},
      {"fp8-rowalpha-fast", true, CUDA_R_16BF, true, true, true, true},
  };
  cublasLtHandle_t lt;
  cublasLtCreate(&lt);
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "stream");
  const std::size_t ws_bytes = std::size_t{32} << 20;
  void* ws;
  check(cudaMalloc(&ws, ws_bytes), "workspace");
  std::printf("| shape | form | algos | best ms | TFLOP/s | vs bf16 |\n|---|---|--:|--:|--:|--:|\n");
  for (const Shape& s : shapes) {
    const std::size_t a_bytes = std::size_t(s.n) * s.k * 2, b_bytes = std::size_t(s.m) * s.k * 2,
                      d_bytes = std::size_t(s.m) * s.n * 4;
    void *w, *x, *d, *bias, *vec, *scalars;
    check(cudaMalloc(&w, a_bytes), "w");
    check(cudaMalloc(&x, b_bytes), "x");
    check(cudaMalloc(&d, d_bytes), "d");
    check(cudaMalloc(&bias, s.n * 2), "bias");
    check(cudaMalloc(&vec, s.n * 4), "alpha vector");
    check(cudaMalloc(&scalars, 16), "scalars");
    fill_kernel<<<1024, 256, 0, stream>>>(static_cast<std::uint8_t*>(w), a_bytes, 1);
    fill_kernel<<<1024, 256, 0, stream>>>(static_cast<std::uint8_t*>(x), b_bytes, 2);
    fill_kernel<<<64, 256, 0, stream>>>(static_cast<std::uint8_t*>(bias), s.n * 2, 3);
    std::vector<float> ones(s.n, 0.01f);
    cudaMemcpy(vec, ones.data(), s.n * 4, cudaMemcpyHostToDevice);
    const float host_scalars[4] = {0.02f, 0.03f, 1.0f, 1.0f};
    cudaMemcpy(scalars, host_scalars, 16, cudaMemcpyHostToDevice);
    double bf16_ms = 0.0;
    for (const Form& f : forms) {
      cublasLtMatmulDesc_t desc;
      cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
      const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n));
      if (f.bias) {
        const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
        const cudaDataType_t bias_type = CUDA_R_16BF;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type));
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
      }
      if (f.tensor_scales) {
        const void* sa = static_cast<float*>(scalars);
        const void* sb = static_cast<float*>(scalars) + 1;
        if (!f.row_alpha) cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa));
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof(sb));
      }
      if (f.row_alpha) {
        const cublasLtPointerMode_t mode = CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof(mode));
      }
      if (f.fast_accum) {
        const std::int8_t on = 1;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &on, sizeof(on));
      }
      const cudaDataType_t in_type = f.fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
      cublasLtMatrixLayout_t la, lb, ld;
      cublasLtMatrixLayoutCreate(&la, in_type, s.k, s.n, s.k);
      cublasLtMatrixLayoutCreate(&lb, in_type, s.k, s.m, s.k);
      cublasLtMatrixLayoutCreate(&ld, f.d_type, s.n, s.m, s.n);
      cublasLtMatmulPreference_t pref;
      cublasLtMatmulPreferenceCreate(&pref);
      const std::uint64_t ws64 = ws_bytes;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws64, sizeof(ws64));
      cublasLtMatmulHeuristicResult_t results[8];
      int found = 0;
      const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 8, results, &found);
      double best = -1.0;
      int best_index = -1;
      const float one = 1.0f;
      const void* alpha = f.row_alpha ? vec : static_cast<const void*>(&one);
      for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < found; ++i) {
        const double ms = time_algo(lt, desc, alpha, w, la, x, lb, d, ld, &results[i].algo, ws, ws_bytes, stream);
        if (ms > 0 && (best < 0 || ms < best)) {
          best = ms;
          best_index = i;
        }
      }
      check(cudaGetLastError(), f.name.c_str());
      const double tflops = best > 0 ? 2.0 * s.m * s.n * s.k / (best * 1e-3) / 1e12 : 0.0;
      if (f.name == "bf16") bf16_ms = best;
      if (best > 0)
        std::printf("| %s | %s | %d (best #%d) | %.3f | %.0f | %.2f |\n", s.name, f.name.c_str(), found, best_index,
                    best, tflops, bf16_ms > 0 ? best / bf16_ms : 0.0);
      else
        std::printf("| %s | %s | %d (%s) | - | - | - |\n", s.name, f.name.c_str(), found, cublasLtGetStatusString(st));
      std::fflush(stdout);
      cublasLtMatmulPreferenceDestroy(pref);
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(ld);
      cublasLtMatmulDescDestroy(desc);
    }
    cudaFree(w);
    cudaFree(x);
    cudaFree(d);
    cudaFree(bias);
    cudaFree(vec);
    cudaFree(scalars);
  }
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("\nGPU: %s; cuBLASLt %zu\n", prop.name, cublasLtGetVersion());
  return 0;
}
