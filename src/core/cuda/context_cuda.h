#pragma once
// The CUDA runtime calls behind RunContext and ContextScope, for host code without CUDA headers
// (compiled only in CUDA builds: context_cuda.cu). Each throws std::runtime_error naming the call.
namespace dattn::cuda {

void* create_stream(int device_index);  // a blocking stream (cudaStreamCreate) on that device
void destroy_stream(void* stream);      // after waiting for it; errors ignored (may run at exit)
void synchronize_stream(void* stream);
int current_device();
void set_device(int device_index);

}  // namespace dattn::cuda
