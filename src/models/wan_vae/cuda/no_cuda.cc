// The CUDA decoder's entry points in a build without CUDA: each one is a clear error.
#ifndef DATTN_WITH_CUDA
#include "dattn/core/error.h"
#include "models/wan_vae/cuda/cuda_decoder.h"

namespace dattn::wan_vae {

class CudaDecoder {};

std::shared_ptr<const CudaDecoder> load_cuda_decoder(WeightStore&, const WanVaeConfig&, WanVaeConvMath) {
  throw UserError("Wan VAE: device cuda needs a dattn built with CUDA (this one was built with DATTN_CUDA=off or "
                  "without nvcc); use --device cpu");
}

Tensor cuda_decode(const CudaDecoder&, const WanVaeConfig&, const Tensor&) {
  throw UserError("Wan VAE: this dattn was built without CUDA");
}

void set_cuda_poison(bool) {}
void set_cuda_attention_score_bytes(std::int64_t) {}

}  // namespace dattn::wan_vae
#endif
