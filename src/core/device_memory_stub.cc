// Device memory in a build without CUDA: every use is a clear error, never a silent no-op.
#ifndef DATTN_WITH_CUDA
#include "dattn/core/device_memory.h"
#include "dattn/core/error.h"
#include "dattn/core/run_context.h"

namespace dattn {
namespace {
[[noreturn]] void no_cuda() { throw UserError("this dattn was built without CUDA (DATTN_CUDA=off or no nvcc)"); }
}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes) no_cuda();
}
DeviceBuffer::~DeviceBuffer() = default;
DeviceBuffer::DeviceBuffer(DeviceBuffer&&) noexcept = default;
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&&) noexcept = default;
void DeviceBuffer::upload(const void*, std::size_t, std::size_t) { no_cuda(); }
void DeviceBuffer::download(void*, std::size_t, std::size_t) const { no_cuda(); }
void DeviceBuffer::fill(std::uint8_t) { no_cuda(); }
void DeviceBuffer::wait_for_owner() const {}
bool DeviceBuffer::on_current_stream() const { return true; }
void copy_bytes(void*, const void*, std::size_t) { no_cuda(); }
void copy_device_bytes_async(void*, const void*, std::size_t) { no_cuda(); }
std::size_t device_bytes_in_use() { return 0; }
std::size_t device_bytes_peak() { return 0; }
void reset_device_peak() {}
void device_synchronize() { no_cuda(); }
void check_device(const char*) { no_cuda(); }
GpuTimer::GpuTimer(void*) { no_cuda(); }
GpuTimer::~GpuTimer() = default;
void GpuTimer::start() { no_cuda(); }
void GpuTimer::stop() { no_cuda(); }
float GpuTimer::elapsed_ms() const { no_cuda(); }

}  // namespace dattn
#endif
