#include "dattn/core/auto_choice.h"

namespace dattn {

Device auto_device(int visible_cuda_devices) { return visible_cuda_devices > 0 ? Device::CUDA : Device::CPU; }

Device auto_device() { return auto_device(cuda_device_count()); }

DType auto_run_dtype(Device device) { return device == Device::CUDA ? DType::BF16 : DType::F32; }

}  // namespace dattn
