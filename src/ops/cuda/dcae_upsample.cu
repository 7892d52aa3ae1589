// CUDA kernel of ops::dcae_upsample (HunyuanVideo-1.5's up-sampling rearrangement plus shortcut).
#include "ops/cuda/frame_kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {
namespace {

// One thread per output element, consecutive threads along the channels (coalesced stores and h reads).
__global__ void dcae_upsample_kernel(const void* h, const void* x, void* out, Elt e, i64 frames, i64 height, i64 width,
                                     i64 cout, i64 cin, int ft, bool first_frame) {
  const i64 oh = 2 * height, ow = 2 * width, ch = 4 * ft * cout;
  const i64 n = frames * oh * ow * cout;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) {
    const i64 co = i % cout, pix = i / cout, ox = pix % ow, oy = pix / ow % oh, to = pix / (ow * oh);
    const bool first = first_frame && to == 0;
    const i64 shifted = to + (first_frame ? 1 : 0);
    const i64 t = first ? 0 : shifted / ft, a = first ? 0 : shifted % ft, p = oy % 2, q = ox % 2;
    const i64 s = first ? 2 * p + q : (a * 2 + p) * 2 + q;
    const i64 repeats = (first ? 4 : 4 * ft) * cout / cin, group = first ? 2 * cout : cout;
    const i64 src = (t * height + oy / 2) * width + ox / 2;
    store1(out, e, i, load1(h, e, src * ch + s * group + co) + load1(x, e, src * cin + (s * cout + co) / repeats));
  }
}

}  // namespace

void dcae_upsample(const void* h, const void* x, void* out, DType dtype, i64 t, i64 height, i64 width, i64 cout,
                   i64 cin, int ft, bool first_frame) {
  const i64 frames = ft * t - (first_frame ? 1 : 0);
  const i64 n = frames * 4 * height * width * cout;
  if (n <= 0) return;
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  dcae_upsample_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(h, x, out, elt_of(dtype), frames, height, width,
                                                                       cout, cin, ft, first_frame);
  check_launch("dcae_upsample");
}

}  // namespace dattn::ops::cuda
