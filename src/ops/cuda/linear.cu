// linear on CUDA: one cuBLASLt matmul with the bias (and linear_gelu_tanh's GELU) applied by its epilogue. Diffusion runs the same
// shapes every step, so the descriptors and the heuristic's algorithm are made once per problem
// (M, N, K, dtype, bias, pointer alignments) and cached; one 32 MB workspace serves every call. The
// handle, workspace and plans belong to the run context (made on its first GEMM), whose stream runs the
// matmuls: the workspace is reused in that stream's order only.
#include <cublasLt.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "core/cuda/cublaslt_check.cuh"
#include "ops/cuda/common.cuh"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/gemm.h"
#include "dattn/core/run_context.h"

namespace dattn::ops::cuda {
namespace {

#define DATTN_LT(call) check_cublaslt((call), "linear", #call)

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

using dattn::cuda::check_cublaslt;
// What cuBLASLt's kernels may assume of an address.
int alignment(const void* p) { return dattn::cuda::pointer_alignment(p); }

struct Key {
  i64 m, n, k;
  int dtype;
  bool bias;
  GemmEpilogue epilogue;
  int align_x, align_w, align_y;
  bool operator<(const Key& o) const {
    return std::tie(m, n, k, dtype, bias, epilogue, align_x, align_w, align_y) <
           std::tie(o.m, o.n, o.k, o.dtype, o.bias, o.epilogue, o.align_x, o.align_w, o.align_y);
  }
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

cudaDataType_t cuda_type(DType d) {
  switch (d) {
    case DType::BF16: return CUDA_R_16BF;
    case DType::F16: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

// The cuBLASLt state of one run context; destroyed with it, after its stream has drained.
struct Lt final : RunContext::Extension {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  cudaStream_t stream = nullptr;
  std::mutex mutex;  // guards plans and the bias pointer written into a cached descriptor
  std::map<Key, std::unique_ptr<Plan>> plans;
  ~Lt() override {
    plans.clear();
    if (workspace) cudaFree(workspace);
    if (handle) cublasLtDestroy(handle);
  }
};
constexpr char kLtKey = 0;

// Made outside the context's lock: prepare_gemm() may make it on another thread while loads run.
std::unique_ptr<Lt> make_lt(RunContext& context) {
  auto s = std::make_unique<Lt>();
  s->stream = static_cast<cudaStream_t>(context.stream());
  DATTN_LT(cublasLtCreate(&s->handle));
  // Plain cudaMalloc on the context's device (current inside its ContextScope), not a DeviceBuffer:
  // a buffer holds its context, and the context holds this.
  DATTN_CUDA_CHECK(cudaMalloc(&s->workspace, kWorkspaceBytes));
  return s;
}

Lt& lt() {
  RunContext& context = current_context(Device::CUDA);
  return context.extension_or<Lt>(&kLtKey, [&] { return make_lt(context); });
}

// Row-major Y = X Wᵀ is column-major Yᵀ[N, M] = W[K, N]ᵀ · Xᵀ[K, M]: A = W transposed, B = X, C = D = Yᵀ.
std::unique_ptr<Plan> make_plan(Lt& s, const Key& key, DType dtype) {
  auto p = std::make_unique<Plan>();
  const cudaDataType_t t = cuda_type(dtype);
  DATTN_LT(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
  DATTN_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)));
  DATTN_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof(no_trans)));
  const bool gelu = key.epilogue == GemmEpilogue::GeluTanh;
  if (key.bias || gelu) {
    const cublasLtEpilogue_t epi =
        gelu ? (key.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU) : CUBLASLT_EPILOGUE_BIAS;
    DATTN_LT(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  }
  DATTN_LT(cublasLtMatrixLayoutCreate(&p->a, t, key.k, key.n, key.k));
  DATTN_LT(cublasLtMatrixLayoutCreate(&p->b, t, key.k, key.m, key.k));
  DATTN_LT(cublasLtMatrixLayoutCreate(&p->c, t, key.n, key.m, key.n));

  cublasLtMatmulPreference_t pref = nullptr;
  DATTN_LT(cublasLtMatmulPreferenceCreate(&pref));
  const std::uint64_t ws = kWorkspaceBytes;
  const std::uint32_t al_a = key.align_w, al_b = key.align_x, al_c = key.align_y;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
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
    throw std::runtime_error("linear (cuda): cuBLASLt has no algorithm for M=" + std::to_string(key.m) +
                             " N=" + std::to_string(key.n) + " K=" + std::to_string(key.k) + " " +
                             std::string(dtype_name(dtype)) + (key.bias ? " with bias" : "") +
                             (gelu ? " and GELU" : "") + ": " +
                             cublasLtGetStatusString(st));
  p->algo = result.algo;
  return p;
}

}  // namespace

void gemm_xwt(const void* x, const void* w, const void* bias, void* y, i64 m, i64 n, i64 k, DType dtype,
              GemmEpilogue epilogue) {
  Lt& s = lt();
  const Key key{m,        n, k, static_cast<int>(dtype), bias != nullptr, epilogue, alignment(x), alignment(w),
                alignment(y)};
  const std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.plans.find(key);
  if (it == s.plans.end()) it = s.plans.emplace(key, make_plan(s, key, dtype)).first;
  Plan& p = *it->second;
  if (bias) DATTN_LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const float one = 1.0f, zero = 0.0f;
  DATTN_LT(cublasLtMatmul(s.handle, p.desc, &one, w, p.a, x, p.b, &zero, y, p.c, y, p.c, &p.algo, s.workspace,
                          kWorkspaceBytes, s.stream));
}

void prepare_gemm() {
  RunContext& context = current_context(Device::CUDA);
  if (context.extension(&kLtKey)) return;
  std::unique_ptr<Lt> made = make_lt(context);  // the slow part, without holding the context's lock
  context.extension_or<Lt>(&kLtKey, [&] { return std::move(made); });  // a state made meanwhile wins
  // A process's first cuBLASLt GEMM costs ~80 ms more than the next of a new shape (~2 ms, measured with
  // bench/text_stage_bench.cc --probe-gemms on the H200): one tiny bf16 GEMM pays it here.
  const Tensor x = Tensor::zeros({8, 64}, DType::BF16, Device::CUDA), w = Tensor::zeros({64, 64}, DType::BF16, Device::CUDA);
  Tensor y = Tensor::empty({8, 64}, DType::BF16, Device::CUDA);
  gemm_xwt(x.data(), w.data(), nullptr, y.data(), 8, 64, 64, DType::BF16, GemmEpilogue::None);
  context.synchronize();
}

std::size_t gemm_plan_count() {
  Lt& s = lt();
  const std::lock_guard<std::mutex> lock(s.mutex);
  return s.plans.size();
}

namespace {

Tensor linear_with(const Tensor& x, const Tensor& weight, const Tensor& bias, GemmEpilogue epilogue) {
  const i64 out = weight.dim(0), in = weight.dim(1);
  const i64 rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));  // also when in = 0
  Shape shape = x.shape();
  shape.back() = out;
  const DType dt = x.dtype();
  if (rows == 0 || out == 0) return Tensor::empty(shape, dt, Device::CUDA);
  if (in == 0) {  // an empty sum: the bias alone (cuBLASLt does not take K = 0)
    Tensor zeros = Tensor::zeros(shape, dt, Device::CUDA);
    Tensor y = bias.defined() ? add(zeros, bias, shape, dt) : zeros;
    return epilogue == GemmEpilogue::GeluTanh ? gelu_tanh(y) : y;
  }
  // One dtype for all operands: the fast path. Mixed dtypes are widened to float32 (exactly), multiplied
  // in float32 and rounded once to x's dtype, as the CPU op does.
  const bool uniform = weight.dtype() == dt && (!bias.defined() || bias.dtype() == dt);
  const DType gemm_dt = uniform ? dt : DType::F32;
  Tensor xg = convert(x, gemm_dt), wg = convert(weight, gemm_dt);
  Tensor bg = bias.defined() ? convert(bias, gemm_dt) : Tensor();
  // Views that start off a 16-byte boundary (narrow0 of odd rows) get fresh, 256-byte aligned copies:
  // the bias epilogue reads its vector with wide loads, and the fast kernels want aligned operands.
  // Tensors from Tensor::empty are always aligned, so the models never pay for this.
  for (Tensor* t : {&xg, &wg, &bg})
    if (t->defined() && alignment(t->data()) < 16) *t = t->clone();
  Tensor y = Tensor::empty(shape, gemm_dt, Device::CUDA);
  gemm_xwt(xg.data(), wg.data(), bg.defined() ? bg.data() : nullptr, y.data(), rows, out, in, gemm_dt, epilogue);
  return convert(y, dt);
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return linear_with(x, weight, bias, GemmEpilogue::None);
}

Tensor linear_gelu_tanh(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return linear_with(x, weight, bias, GemmEpilogue::GeluTanh);
}

void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const RowWindow& into) {
  const i64 items = x.dim(0), seq = x.dim(1), in = weight.dim(1), out = weight.dim(0);
  const DType dt = x.dtype();
  Tensor window = into.out;
  const bool direct = in > 0 && weight.dtype() == dt && (!bias.defined() || bias.dtype() == dt) &&
                      alignment(x.data()) >= 16 && alignment(weight.data()) >= 16 &&
                      (!bias.defined() || alignment(bias.data()) >= 16) && alignment(window.data()) >= 16 &&
                      (out * static_cast<i64>(dtype_size(dt))) % 16 == 0;
  if (!direct) {  // the rare layouts: the tensor-returning form, then a copy
    copy_into(linear(x, weight, bias), into);
    return;
  }
  if (x.numel() == 0 || out == 0) return;
  // One GEMM per batch item: an item's rows are contiguous in x and in its window.
  const i64 per_token = x.numel() / (items * seq * in);  // GEMM rows per token: 1 for x [B, S, in]
  const i64 rows = seq * per_token, out_rows = window.dim(1) * per_token;
  const std::size_t esize = dtype_size(dt);
  for (i64 b = 0; b < items; ++b) {
    const auto* xb = static_cast<const std::uint8_t*>(x.data()) + static_cast<std::size_t>(b * rows * in) * esize;
    auto* yb = static_cast<std::uint8_t*>(window.data()) +
               static_cast<std::size_t>((b * out_rows + into.row * per_token) * out) * esize;
    gemm_xwt(xb, weight.data(), bias.defined() ? bias.data() : nullptr, yb, rows, out, in, dt);
  }
}

Tensor linear(const RowWindow& x_rows, i64 rows, const Tensor& weight, const Tensor& bias) {
  const Tensor& x = x_rows.out;
  const i64 items = x.dim(0), seq = x.dim(1), in = weight.dim(1), out = weight.dim(0);
  const DType dt = x.dtype();
  const std::size_t esize = dtype_size(dt);
  const bool direct = in > 0 && weight.dtype() == dt && (!bias.defined() || bias.dtype() == dt) &&
                      alignment(x.data()) >= 16 && alignment(weight.data()) >= 16 &&
                      (!bias.defined() || alignment(bias.data()) >= 16) &&
                      (static_cast<std::size_t>(in) * esize) % 16 == 0 &&  // every item's first row aligned
                      (static_cast<std::size_t>(rows * out) * esize) % 16 == 0;  // and every item's result
  if (!direct) return linear(copy_from(x_rows, rows), weight, bias);  // the rare layouts
  Tensor y = Tensor::empty({items, rows, out}, dt, Device::CUDA);
  if (rows == 0 || out == 0) return y;
  for (i64 b = 0; b < items; ++b) {
    const auto* xb = static_cast<const std::uint8_t*>(x.data()) + static_cast<std::size_t>((b * seq + x_rows.row) * in) * esize;
    auto* yb = static_cast<std::uint8_t*>(y.data()) + static_cast<std::size_t>(b * rows * out) * esize;
    gemm_xwt(xb, weight.data(), bias.defined() ? bias.data() : nullptr, yb, rows, out, in, dt);
  }
  return y;
}

}  // namespace dattn::ops::cuda
