#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "core/cuda/check.cuh"
#include "core/stage_timer_events.h"
#include "dattn/core/run_context.h"

namespace dattn::stage_events {
namespace {

struct Pair {
  cudaEvent_t begin = nullptr, end = nullptr;
  bool ended = false;
};

// The context's event pairs, reused from one collect() to the next.
struct Events final : RunContext::Extension {
  std::vector<Pair> pairs;
  ~Events() override {
    for (Pair& p : pairs) {
      cudaEventDestroy(p.begin);
      cudaEventDestroy(p.end);
    }
  }
};
constexpr char kKey = 0;

std::vector<Pair>& pool(RunContext& context) {
  return context.extension_or<Events>(&kKey, [] { return std::make_unique<Events>(); }).pairs;
}

cudaStream_t stream_of(RunContext& context) { return static_cast<cudaStream_t>(context.stream()); }

}  // namespace

void begin(RunContext& context, std::size_t i) {
  auto& p = pool(context);
  while (p.size() <= i) {
    Pair n;
    DATTN_CUDA_CHECK(cudaEventCreate(&n.begin));
    const cudaError_t err = cudaEventCreate(&n.end);
    if (err != cudaSuccess) cudaEventDestroy(n.begin);
    DATTN_CUDA_CHECK(err);
    p.push_back(n);
  }
  p[i].ended = false;
  DATTN_CUDA_CHECK(cudaEventRecord(p[i].begin, stream_of(context)));
}

void end(RunContext& context, std::size_t i) {
  auto& p = pool(context);
  DATTN_CUDA_CHECK(cudaEventRecord(p[i].end, stream_of(context)));
  p[i].ended = true;
}

double elapsed_ms(RunContext& context, std::size_t i) {
  auto& p = pool(context);
  if (i >= p.size() || !p[i].ended) return 0.0;
  DATTN_CUDA_CHECK(cudaEventSynchronize(p[i].end));
  float ms = 0;
  DATTN_CUDA_CHECK(cudaEventElapsedTime(&ms, p[i].begin, p[i].end));
  return ms;
}

}  // namespace dattn::stage_events
