#pragma once
// What "auto" means for a run's device and dtype (the default of --device and --dtype): the device that
// is there, and the dtype models are meant to run in on it.
#include "dattn/core/device.h"
#include "dattn/core/dtype.h"

namespace dattn {

// CUDA when at least one CUDA device is visible, else the CPU.
Device auto_device(int visible_cuda_devices);
// The same for this build and machine (cuda_device_count(): 0 in a build without CUDA).
Device auto_device();

// bf16 on CUDA: what the tensor-core kernels and every attention backend take (SAGE_ATTN takes only
// bf16 and fp16; in fp32 the platform default falls to TORCH_SDPA). fp32 on the CPU: the exact path,
// which matches diffusers' float32 pipeline (README, parity).
DType auto_run_dtype(Device device);

}  // namespace dattn
