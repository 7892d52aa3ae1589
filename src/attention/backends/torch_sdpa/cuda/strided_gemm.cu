// Strided-batched GEMMs for TORCH_SDPA through cuBLASLt. A layer uses the same few shapes every call,
// so each shape's descriptors and heuristic algorithm are made once and cached in the current run
// context, like ops' linears; no workspace (the attention GEMMs have short k or many columns).
#include "attention/backends/torch_sdpa/cuda/strided_gemm.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "core/cuda/cublaslt_check.cuh"
#include "dattn/core/run_context.h"

namespace dattn::sdpa {
namespace {

using dattn::cuda::check_cublaslt;
#define DATTN_SDPA_LT(call) check_cublaslt((call), "TORCH_SDPA", #call)

// Everything of a StridedGemm but its pointers and alpha.
using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, bool, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, int, int>;
Key key_of(const StridedGemm& g) {
  return {g.m,        g.n,   g.k,        g.batch,    static_cast<int>(g.dtype), g.trans_a, g.lda, g.stride_a,
          g.ldb,      g.stride_b, g.ldc, g.stride_c, g.align_a,                 g.align_b, g.align_c};
}

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  std::string refusal;  // non-empty: cuBLASLt has no algorithm (remembered, not asked again)
  ~Plan() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

struct Lt final : RunContext::Extension {
  cublasLtHandle_t handle = nullptr;
  std::mutex mutex;  // guards plans
  std::map<Key, std::unique_ptr<Plan>> plans;
  ~Lt() override {
    plans.clear();
    if (handle) cublasLtDestroy(handle);
  }
};
constexpr char kLtKey = 0;

Lt& lt() {
  RunContext& context = current_context(Device::CUDA);
  return context.extension_or<Lt>(&kLtKey, [] {
    auto s = std::make_unique<Lt>();
    DATTN_SDPA_LT(cublasLtCreate(&s->handle));
    return s;
  });
}

cudaDataType_t cuda_type(DType d) {
  switch (d) {
    case DType::BF16: return CUDA_R_16BF;
    case DType::F16: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

cublasLtMatrixLayout_t layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                              std::int64_t batch, std::int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  DATTN_SDPA_LT(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld));
  const auto count = static_cast<std::int32_t>(batch);
  DATTN_SDPA_LT(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
  DATTN_SDPA_LT(
      cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  return l;
}

std::unique_ptr<Plan> make_plan(const Lt& s, const StridedGemm& g) {
  auto p = std::make_unique<Plan>();
  const cudaDataType_t t = cuda_type(g.dtype);
  DATTN_SDPA_LT(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  DATTN_SDPA_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  DATTN_SDPA_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  p->a = g.trans_a ? layout(t, g.k, g.m, g.lda, g.batch, g.stride_a) : layout(t, g.m, g.k, g.lda, g.batch, g.stride_a);
  p->b = layout(t, g.k, g.n, g.ldb, g.batch, g.stride_b);
  p->c = layout(CUDA_R_32F, g.m, g.n, g.ldc, g.batch, g.stride_c);

  cublasLtMatmulPreference_t pref = nullptr;
  DATTN_SDPA_LT(cublasLtMatmulPreferenceCreate(&pref));
  const std::uint64_t no_workspace = 0;
  const std::uint32_t al_a = g.align_a, al_b = g.align_b, al_c = g.align_c;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &no_workspace,
                                       sizeof(no_workspace));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof(al_c));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof(al_c));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(s.handle, p->desc, p->a, p->b, p->c, p->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0)
    p->refusal = "cuBLASLt has no algorithm for a " + std::to_string(g.batch) + " x [" + std::to_string(g.m) + " x " +
                 std::to_string(g.k) + "] . [" + std::to_string(g.k) + " x " + std::to_string(g.n) + "] " +
                 std::string(dtype_name(g.dtype)) + " GEMM (alignments " + std::to_string(g.align_a) + "/" +
                 std::to_string(g.align_b) + "/" + std::to_string(g.align_c) + " bytes): " +
                 cublasLtGetStatusString(st);
  else
    p->algo = result.algo;
  return p;
}

const Plan& plan_for(Lt& s, const StridedGemm& g) {
  const std::lock_guard<std::mutex> lock(s.mutex);
  const Key key = key_of(g);
  auto it = s.plans.find(key);
  if (it == s.plans.end()) it = s.plans.emplace(key, make_plan(s, g)).first;
  return *it->second;
}

}  // namespace

std::string strided_gemm_refusal(const StridedGemm& gemm) {
  Lt& s = lt();
  return plan_for(s, gemm).refusal;
}

void run_strided_gemm(const StridedGemm& g, void* stream) {
  Lt& s = lt();
  const Plan& p = plan_for(s, g);
  if (!p.refusal.empty()) throw std::runtime_error("TORCH_SDPA (cuda): " + p.refusal);
  const float zero = 0.0f;
  DATTN_SDPA_LT(cublasLtMatmul(s.handle, p.desc, &g.alpha, g.a, p.a, g.b, p.b, &zero, g.c, p.c, g.c, p.c, &p.algo,
                               nullptr, 0, static_cast<cudaStream_t>(stream)));
}

}  // namespace dattn::sdpa
