// TokenRows construction and the per-context cache of uploaded row tables (see token_rows.cuh).
#include "ops/cuda/token_rows.cuh"

#include <list>
#include <memory>
#include <mutex>

namespace dattn::ops::cuda {
namespace {

struct CachedTable {
  std::vector<std::int32_t> host;
  std::int32_t* device = nullptr;
};

// A few tables, most recently used first, in the context that uploaded them. An evicted table is freed
// in the order of the context's stream, after the kernels queued there that may still read it.
constexpr std::size_t kCachedTables = 4;

struct TableCache final : RunContext::Extension {
  cudaStream_t stream = nullptr;
  std::mutex mutex;
  std::list<CachedTable> tables;
  ~TableCache() override {  // the context's stream has drained
    for (CachedTable& t : tables) cudaFree(t.device);
  }
};
constexpr char kCacheKey = 0;

const std::int32_t* cached_upload(const std::vector<std::int32_t>& rows) {
  RunContext& context = current_context(Device::CUDA);
  TableCache& cache = context.extension_or<TableCache>(&kCacheKey, [&] {
    auto c = std::make_unique<TableCache>();
    c->stream = static_cast<cudaStream_t>(context.stream());
    return c;
  });
  const std::lock_guard<std::mutex> lock(cache.mutex);
  auto& list = cache.tables;
  for (auto it = list.begin(); it != list.end(); ++it)
    if (it->host == rows) {
      list.splice(list.begin(), list, it);
      return list.front().device;
    }
  CachedTable t;
  t.host = rows;
  const std::size_t bytes = rows.size() * sizeof(std::int32_t);
  DATTN_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&t.device), bytes, cache.stream));
  // From the cached host copy, which lives as long as the device one (pageable: staged before return).
  list.push_front(std::move(t));
  const cudaError_t err =
      cudaMemcpyAsync(list.front().device, list.front().host.data(), bytes, cudaMemcpyHostToDevice, cache.stream);
  if (err != cudaSuccess) {
    cudaFreeAsync(list.front().device, cache.stream);
    list.pop_front();
    DATTN_CUDA_CHECK(err);
  }
  if (list.size() > kCachedTables) {
    cudaFreeAsync(list.back().device, cache.stream);
    list.pop_back();
  }
  return list.front().device;
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
