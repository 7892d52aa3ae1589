// Resampling of channels-last frames: nearest 2x upsampling (which also splits a time conv's doubled
// channels into frames) and the DupUp3D shortcut (ops/frames.h).
#include <type_traits>

#include "ops/cuda/frame_kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {
namespace {

// Output frame t * parts + a, pixel (oy, ox), channel ch reads x[t, oy / 2, ox / 2, a * c + ch]; `vec`
// elements (1 or 4) at a time, c % vec == 0.
template <int kVec>
__global__ void upsample2x_kernel(const float* x, float* y, i64 frames_in, i64 h, i64 w, i64 c, int parts) {
  using V = std::conditional_t<kVec == 4, float4, float>;
  const i64 cv = c / kVec, ow = 2 * w, oh = 2 * h;
  const i64 n = frames_in * parts * oh * ow * cv;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) {
    const i64 ch = i % cv, pix = i / cv, ox = pix % ow, oy = pix / ow % oh, fo = pix / (ow * oh);
    const i64 t = fo / parts, a = fo % parts;
    reinterpret_cast<V*>(y)[i] =
        reinterpret_cast<const V*>(x)[((t * h + oy / 2) * w + ox / 2) * parts * cv + a * cv + ch];
  }
}

__global__ void dup_up_kernel(float* out, const float* in, i64 t_out, i64 c_out, i64 h, i64 w, i64 c_in, int ft,
                              int fs, int drop) {
  const i64 oh = h * fs, ow = w * fs, repeats = c_out * ft * fs * fs / c_in;
  const i64 n = t_out * oh * ow * c_out;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) {
    const i64 co = i % c_out, pix = i / c_out, ox = pix % ow, oy = pix / ow % oh, to = pix / (ow * oh) + drop;
    const i64 t = to / ft, a = to % ft, p = oy % fs, q = ox % fs;
    const i64 ci = (((co * ft + a) * fs + p) * fs + q) / repeats;
    out[i] += in[((t * h + oy / fs) * w + ox / fs) * c_in + ci];
  }
}

}  // namespace

void upsample_nearest2x(const float* x, float* y, i64 frames_in, i64 h, i64 w, i64 c, int parts) {
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  const i64 n = frames_in * parts * 4 * h * w * c;
  if (n == 0) return;
  const bool vec = c % 4 == 0 && reinterpret_cast<std::uintptr_t>(x) % 16 == 0 &&
                   reinterpret_cast<std::uintptr_t>(y) % 16 == 0;
  if (vec)
    upsample2x_kernel<4><<<grid_for(n / 4, kThreads), kThreads, 0, stream>>>(x, y, frames_in, h, w, c, parts);
  else
    upsample2x_kernel<1><<<grid_for(n, kThreads), kThreads, 0, stream>>>(x, y, frames_in, h, w, c, parts);
  check_launch("upsample_nearest2x");
}

void add_dup_up(float* out, const float* in, i64 t_out, i64 c_out, i64 h, i64 w, i64 c_in, int ft, int fs, int drop) {
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  const i64 n = t_out * h * fs * w * fs * c_out;
  if (n == 0) return;
  dup_up_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(out, in, t_out, c_out, h, w, c_in, ft, fs, drop);
  check_launch("add_dup_up");
}

}  // namespace dattn::ops::cuda
