// Can uploads skip the pinned staging copy? For each file given: map it, register the mapping with the
// driver read-only (cudaHostRegisterReadOnly: the DMA then reads the page cache directly), copy it to the
// device twice, unregister; the same in 256 MiB pieces (register, copy, unregister); and, for reference,
// one thread copying through a 256 MiB pinned buffer. Prints GB/s per step.
//   build/bench/dattn_host_register_probe FILE...
// Results: bench/results/2026-12-04-h200-torch-sdpa-gemm-and-text-stage.md (registration, not the copy,
// is the cost: 11-19 GB/s of pinning against the 55 GB/s copy).
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("  %s: %s\n", what, cudaGetErrorString(e));
  cudaGetLastError();
  return false;
}

void probe(const char* path) {
  const int fd = open(path, O_RDONLY);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
    std::printf("%s: cannot open or empty\n", path);
    if (fd >= 0) close(fd);
    return;
  }
  const auto n = static_cast<size_t>(st.st_size);
  const double gb = static_cast<double>(n) / 1e9;
  void* host = mmap(nullptr, n, PROT_READ, MAP_SHARED, fd, 0);
  void* dev = nullptr;
  if (host == MAP_FAILED || !ok(cudaMalloc(&dev, n), "cudaMalloc")) {
    close(fd);
    return;
  }
  const double t0 = seconds_now();
  if (ok(cudaHostRegister(host, n, cudaHostRegisterReadOnly), "cudaHostRegister")) {
    const double t1 = seconds_now();
    ok(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice), "copy");
    const double t2 = seconds_now();
    ok(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice), "copy");
    const double t3 = seconds_now();
    ok(cudaHostUnregister(host), "cudaHostUnregister");
    const double t4 = seconds_now();
    std::printf("%s: %.2f GB: register %.3f s (%.1f GB/s), copy %.3f s (%.1f GB/s), again %.3f s, unregister %.3f s; "
                "register + copy %.1f GB/s\n",
                path, gb, t1 - t0, gb / (t1 - t0), t2 - t1, gb / (t2 - t1), t3 - t2, t4 - t3, gb / (t2 - t0));
  }
  constexpr size_t kPiece = size_t{256} << 20;
  const double c0 = seconds_now();
  bool pieces_ok = true;
  for (size_t at = 0; at < n && pieces_ok; at += kPiece) {
    const size_t len = at + kPiece < n ? kPiece : n - at;
    char* from = static_cast<char*>(host) + at;
    pieces_ok = ok(cudaHostRegister(from, len, cudaHostRegisterReadOnly), "piece register") &&
                ok(cudaMemcpy(static_cast<char*>(dev) + at, from, len, cudaMemcpyHostToDevice), "piece copy") &&
                ok(cudaHostUnregister(from), "piece unregister");
  }
  const double c1 = seconds_now();
  if (pieces_ok) std::printf("  in 256 MiB pieces (register, copy, unregister): %.3f s (%.1f GB/s)\n", c1 - c0, gb / (c1 - c0));
  void* staging = nullptr;
  if (ok(cudaMallocHost(&staging, kPiece), "cudaMallocHost")) {
    const double b0 = seconds_now();
    for (size_t at = 0; at < n; at += kPiece) {
      const size_t len = at + kPiece < n ? kPiece : n - at;
      std::memcpy(staging, static_cast<char*>(host) + at, len);
      ok(cudaMemcpy(static_cast<char*>(dev) + at, staging, len, cudaMemcpyHostToDevice), "staged copy");
    }
    const double b1 = seconds_now();
    std::printf("  through a pinned buffer, one thread, no overlap: %.3f s (%.1f GB/s)\n", b1 - b0, gb / (b1 - b0));
    cudaFreeHost(staging);
  }
  cudaFree(dev);
  munmap(host, n);
  close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  int read_only = 0;
  cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported, 0);
  std::printf("cudaDevAttrHostRegisterReadOnlySupported = %d\n", read_only);
  if (!ok(cudaFree(nullptr), "CUDA start")) return 1;
  for (int i = 1; i < argc; ++i) probe(argv[i]);
  return 0;
}
