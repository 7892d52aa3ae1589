// The causal convolutions of ops::CausalConv3d through cuDNN's convolution API (legacy descriptors, 5-D
// NDHWC float32 tensors, or bfloat16 ones with a float32 compute type). A VAE decode runs the same few
// dozen geometries for every latent frame, so the descriptors and the algorithm are made once per
// geometry and cached (plan once, run many).
#include <cudnn.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "dattn/core/device_memory.h"
#include "dattn/core/run_context.h"
#include "ops/cuda/conv3d.h"
#include "ops/cuda/frame_kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {
namespace {

std::string describe(const ConvGeometry& g) {
  return "conv " + std::to_string(g.cin) + "->" + std::to_string(g.cout) + " kernel " + std::to_string(g.kt) + "x" +
         std::to_string(g.k) + "x" + std::to_string(g.k) + " over " + std::to_string(g.frames_in) + " frames of " +
         std::to_string(g.h) + "x" + std::to_string(g.w) + (g.prepadded ? " (prepadded)" : "") +
         (g.bf16   ? " (bf16)"
          : g.tf32 ? " (tf32)"
                   : " (fp32)");
}

void check(cudnnStatus_t s, const char* call, const ConvGeometry& g) {
  if (s != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string("conv3d: ") + describe(g) + ": " + call + " failed: " + cudnnGetErrorString(s));
}
#define DATTN_CUDNN(call, g) check((call), #call, (g))

using Key = std::tuple<int, int, int, int, int, int, int, bool, bool, bool>;
Key key_of(const ConvGeometry& g) {
  return {g.frames_in, g.h, g.w, g.cin, g.cout, g.kt, g.k, g.tf32, g.prepadded, g.bf16};
}

struct Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::size_t workspace = 0;
  ~Plan() {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
  }
};

// The cuDNN state of one run context, its handle bound to the context's stream; destroyed with the
// context, after its stream has drained.
struct State final : RunContext::Extension {
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;
  std::map<Key, std::unique_ptr<Plan>> plans;
  ~State() override {
    plans.clear();
    if (handle) cudnnDestroy(handle);
  }
};
constexpr char kStateKey = 0;

// Made outside the context's lock: prepare_conv3d() may make it on another thread while loads run.
std::unique_ptr<State> make_state(RunContext& context) {
  auto st = std::make_unique<State>();
  const cudnnStatus_t status = cudnnCreate(&st->handle);
  if (status != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string("conv3d: cudnnCreate failed: ") + cudnnGetErrorString(status) +
                             " (is libcudnn 9 installed with all its sub-libraries, and a GPU visible?)");
  const cudnnStatus_t bound = cudnnSetStream(st->handle, static_cast<cudaStream_t>(context.stream()));
  if (bound != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string("conv3d: cudnnSetStream failed: ") + cudnnGetErrorString(bound));
  return st;
}

State& state() {
  RunContext& context = current_context(Device::CUDA);
  return context.extension_or<State>(&kStateKey, [&] { return make_state(context); });
}

// Whether an algorithm result may be used: it ran (or the heuristic says it can) and uses TF32 only
// where allowed (bf16 data: any math type, each accumulating in the float32 compute type).
bool acceptable(const cudnnConvolutionFwdAlgoPerf_t& p, const ConvGeometry& g) {
  return p.status == CUDNN_STATUS_SUCCESS && (g.bf16 || g.tf32 || p.mathType == CUDNN_FMA_MATH);
}

std::unique_ptr<Plan> make_plan(cudnnHandle_t handle, const ConvGeometry& g) {
  auto p = std::make_unique<Plan>();
  DATTN_CUDNN(cudnnCreateTensorDescriptor(&p->x), g);
  DATTN_CUDNN(cudnnCreateTensorDescriptor(&p->y), g);
  DATTN_CUDNN(cudnnCreateFilterDescriptor(&p->w), g);
  DATTN_CUDNN(cudnnCreateConvolutionDescriptor(&p->conv), g);
  // Dimensions are given in N, C, D, H, W order; the NHWC format makes the memory layout N, D, H, W, C
  // (and K, T, R, S, C for the filter).
  const cudnnDataType_t data = g.bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  const int border = g.prepadded ? g.k - 1 : 0;  // a prepadded input is larger by it, and needs no padding
  const int xdims[5] = {1, g.cin, g.frames_in, g.h + border, g.w + border};
  DATTN_CUDNN(cudnnSetTensorNdDescriptorEx(p->x, CUDNN_TENSOR_NHWC, data, 5, xdims), g);
  const int wdims[5] = {g.cout, g.cin, g.kt, g.k, g.k};
  DATTN_CUDNN(cudnnSetFilterNdDescriptor(p->w, data, CUDNN_TENSOR_NHWC, 5, wdims), g);
  const int ps = g.prepadded ? 0 : (g.k - 1) / 2;
  const int pad[3] = {0, ps, ps}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  DATTN_CUDNN(cudnnSetConvolutionNdDescriptor(p->conv, 3, pad, stride, dilation, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT),
              g);
  // The compute type stays CUDNN_DATA_FLOAT for bf16 data (PSEUDO_BFLOAT16_CONFIG: float32 accumulation).
  DATTN_CUDNN(cudnnSetConvolutionMathType(p->conv, g.bf16 || g.tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH), g);
  int ydims[5] = {};
  DATTN_CUDNN(cudnnGetConvolutionNdForwardOutputDim(p->conv, p->x, p->w, 5, ydims), g);
  const int expected[5] = {1, g.cout, g.frames_in - g.kt + 1, g.h, g.w};
  for (int i = 0; i < 5; ++i)
    if (ydims[i] != expected[i])
      throw std::logic_error("conv3d: " + describe(g) + ": cuDNN output dimension " + std::to_string(i) + " is " +
                             std::to_string(ydims[i]) + ", expected " + std::to_string(expected[i]));
  DATTN_CUDNN(cudnnSetTensorNdDescriptorEx(p->y, CUDNN_TENSOR_NHWC, data, 5, ydims), g);

  // The heuristic, not cudnnFind: on the H200 with cuDNN 9.14 only IMPLICIT_PRECOMP_GEMM takes these NDHWC
  // float32 3-D convolutions (cudnnFind measured nothing else), so timing runs would only cost time.
  std::vector<cudnnConvolutionFwdAlgoPerf_t> results(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  int returned = 0;
  DATTN_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(handle, p->x, p->w, p->conv, p->y,
                                                     static_cast<int>(results.size()), &returned, results.data()),
              g);
  // The list is ordered by expected speed: the first usable algorithm whose workspace fits
  // kMaxConvWorkspaceBytes, else the usable one with the smallest workspace (some shapes, e.g. the
  // 12-channel conv_out, have a single algorithm that needs more).
  std::string tried;
  int best = -1, smallest = -1;
  std::vector<std::size_t> workspace(returned, 0);
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& r = results[i];
    tried += " algo " + std::to_string(static_cast<int>(r.algo)) + ":" + cudnnGetErrorString(r.status) + "/" +
             std::to_string(r.memory >> 20) + "MiB/math" + std::to_string(static_cast<int>(r.mathType));
    if (!acceptable(r, g)) continue;
    // Its math type set on the descriptor, the workspace query confirms the combination is supported.
    if (cudnnSetConvolutionMathType(p->conv, r.mathType) != CUDNN_STATUS_SUCCESS ||
        cudnnGetConvolutionForwardWorkspaceSize(handle, p->x, p->w, p->conv, p->y, r.algo, &workspace[i]) !=
            CUDNN_STATUS_SUCCESS)
      continue;
    if (smallest < 0 || workspace[i] < workspace[smallest]) smallest = i;
    if (workspace[i] <= kMaxConvWorkspaceBytes) {
      best = i;
      break;
    }
  }
  if (best < 0) best = smallest;
  if (best < 0)
    throw std::runtime_error("conv3d: " + describe(g) + ": cuDNN offers no usable forward algorithm (" +
                             std::to_string(returned) + " candidates:" + tried + ")");
  DATTN_CUDNN(cudnnSetConvolutionMathType(p->conv, results[best].mathType), g);
  p->algo = results[best].algo;
  p->workspace = workspace[best];
  return p;
}

}  // namespace

void prepare_conv3d() {
  RunContext& context = current_context(Device::CUDA);
  if (context.extension(&kStateKey)) return;
  std::unique_ptr<State> made = make_state(context);  // cudnnCreate, without holding the context's lock
  context.extension_or<State>(&kStateKey, [&] { return std::move(made); });  // a state made meanwhile wins
}

void conv3d(const ConvGeometry& g, const void* x, const void* weight, const float* bias, void* y) {
  State& s = state();
  Plan* plan = nullptr;
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.plans.find(key_of(g));
    if (it == s.plans.end()) it = s.plans.emplace(key_of(g), make_plan(s.handle, g)).first;
    plan = it->second.get();  // plans are never erased
  }
  DeviceBuffer workspace(plan->workspace);  // stream-ordered pool: freed for reuse once the conv is queued
  const float one = 1.0f, zero = 0.0f;
  DATTN_CUDNN(cudnnConvolutionForward(s.handle, &one, plan->x, x, plan->w, weight, plan->conv, plan->algo,
                                      workspace.get(), plan->workspace, &zero, plan->y, y),
              g);
  if (bias)
    add_bias(y, g.bf16 ? DType::BF16 : DType::F32, bias, static_cast<i64>(g.frames_in - g.kt + 1) * g.h * g.w, g.cout);
}

}  // namespace dattn::ops::cuda
