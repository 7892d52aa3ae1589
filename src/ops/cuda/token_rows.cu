// TokenRows construction and the cache of uploaded row tables (see token_rows.cuh).
#include "ops/cuda/token_rows.cuh"

#include <list>
#include <mutex>

namespace dattn::ops::cuda {
namespace {

struct CachedTable {
  std::vector<std::int32_t> host;
  std::int32_t* device = nullptr;
};

// A few tables, most recently used first. An evicted table is freed with cudaFree, which waits for the
// kernels that may still read it.
constexpr std::size_t kCachedTables = 4;

const std::int32_t* cached_upload(const std::vector<std::int32_t>& rows) {
  static std::mutex mutex;
  static std::list<CachedTable> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  for (auto it = cache.begin(); it != cache.end(); ++it)
    if (it->host == rows) {
      cache.splice(cache.begin(), cache, it);
      return cache.front().device;
    }
  CachedTable t;
  t.host = rows;
  DATTN_CUDA_CHECK(cudaMalloc(&t.device, rows.size() * sizeof(std::int32_t)));
  const cudaError_t err = cudaMemcpy(t.device, rows.data(), rows.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice);
  if (err != cudaSuccess) {
    cudaFree(t.device);
    DATTN_CUDA_CHECK(err);
  }
  cache.push_front(std::move(t));
  if (cache.size() > kCachedTables) {
    cudaFree(cache.back().device);
    cache.pop_back();
  }
  return cache.front().device;
}

}  // namespace

TokenRows token_rows(const std::vector<std::int32_t>& row_of_token) {
  TokenRows r;
  if (row_of_token.empty()) {
    r.runs = 1, r.run_start[0] = 0, r.run_row[0] = 0;
    return r;
  }
  for (std::size_t i = 0; i < row_of_token.size(); ++i) {
    if (i > 0 && row_of_token[i] == row_of_token[i - 1]) continue;
    if (r.runs == TokenRows::kMaxRuns) {
      r.table = cached_upload(row_of_token);
      return r;
    }
    r.run_start[r.runs] = static_cast<i64>(i);
    r.run_row[r.runs] = row_of_token[i];
    ++r.runs;
  }
  return r;
}

}  // namespace dattn::ops::cuda
