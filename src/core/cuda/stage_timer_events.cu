#include <cuda_runtime.h>

#include <vector>

#include "core/cuda/check.cuh"
#include "core/stage_timer_events.h"

namespace dattn::stage_events {
namespace {

struct Pair {
  cudaEvent_t begin = nullptr, end = nullptr;
  bool ended = false;
};
std::vector<Pair>& pool() {
  static std::vector<Pair> p;
  return p;
}

}  // namespace

void reset() {
  for (Pair& p : pool()) p.ended = false;
}

void begin(std::size_t i) {
  auto& p = pool();
  while (p.size() <= i) {
    Pair n;
    DATTN_CUDA_CHECK(cudaEventCreate(&n.begin));
    DATTN_CUDA_CHECK(cudaEventCreate(&n.end));
    p.push_back(n);
  }
  p[i].ended = false;
  DATTN_CUDA_CHECK(cudaEventRecord(p[i].begin, nullptr));
}

void end(std::size_t i) {
  DATTN_CUDA_CHECK(cudaEventRecord(pool()[i].end, nullptr));
  pool()[i].ended = true;
}

std::vector<double> elapsed_ms(std::size_t n) {
  std::vector<double> out(n, 0.0);
  auto& p = pool();
  for (std::size_t i = 0; i < n && i < p.size(); ++i) {
    if (!p[i].ended) continue;
    DATTN_CUDA_CHECK(cudaEventSynchronize(p[i].end));
    float ms = 0;
    DATTN_CUDA_CHECK(cudaEventElapsedTime(&ms, p[i].begin, p[i].end));
    out[i] = ms;
  }
  return out;
}

}  // namespace dattn::stage_events
