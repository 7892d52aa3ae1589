// upload.h in a build without CUDA: every upload is a clear error, never a silent no-op.
#ifndef DATTN_WITH_CUDA
#include "dattn/core/error.h"
#include "dattn/core/upload.h"

namespace dattn {
namespace {
[[noreturn]] void no_cuda() { throw UserError("this dattn was built without CUDA (DATTN_CUDA=off or no nvcc)"); }
}  // namespace

void upload_bytes(void*, const void*, std::size_t n) {
  if (n) no_cuda();
}
void download_bytes(void*, const void*, std::size_t n) {
  if (n) no_cuda();
}
void upload_file_bytes(void*, int, std::uint64_t, std::size_t n, const char*) {
  if (n) no_cuda();
}
Tensor upload_tensor(const Tensor&, DType) { no_cuda(); }
Tensor upload_tensor_from_file(int, std::uint64_t, const Shape&, DType, DType, const char*) { no_cuda(); }
bool converts_on_device(DType, DType) { return false; }
UploadStats upload_stats() { return {}; }
double pinned_upload_bandwidth(std::size_t, int) { no_cuda(); }

}  // namespace dattn
#endif
