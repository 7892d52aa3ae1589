// Resampling of channels-last frames: nearest 2x upsampling (which also splits a time conv's doubled
// channels into frames) and the DupUp3D shortcut (ops/frames.h).
#include <cstdint>

#include "ops/cuda/frame_kernels.h"
#include "ops/cuda/common.cuh"

namespace dattn::ops::cuda {
namespace {

// Output frame t * parts + a, pixel (oy, ox), channel ch reads x[t, oy / 2, ox / 2, a * c + ch]; one V
// (16, 4 or 2 bytes) at a time, a frame part's channels `cv` Vs long.
template <typename V>
__global__ void upsample2x_kernel(const V* x, V* y, i64 frames_in, i64 h, i64 w, i64 cv, int parts) {
  const i64 ow = 2 * w, oh = 2 * h;
  const i64 n = frames_in * parts * oh * ow * cv;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) {
    const i64 ch = i % cv, pix = i / cv, ox = pix % ow, oy = pix / ow % oh, fo = pix / (ow * oh);
    const i64 t = fo / parts, a = fo % parts;
    y[i] = x[((t * h + oy / 2) * w + ox / 2) * parts * cv + a * cv + ch];
  }
}

template <typename V>
void launch_upsample(const void* x, void* y, i64 frames_in, i64 h, i64 w, i64 part_bytes, int parts) {
  constexpr int kThreads = 256;
  const i64 cv = part_bytes / static_cast<i64>(sizeof(V));
  const i64 n = frames_in * parts * 4 * h * w * cv;
  upsample2x_kernel<V><<<grid_for(n, kThreads), kThreads, 0, current_stream()>>>(
      static_cast<const V*>(x), static_cast<V*>(y), frames_in, h, w, cv, parts);
}

__global__ void dup_up_kernel(void* out, const void* in, Elt e, i64 t_out, i64 c_out, i64 h, i64 w, i64 c_in, int ft,
                              int fs, int drop) {
  const i64 oh = h * fs, ow = w * fs, repeats = c_out * ft * fs * fs / c_in;
  const i64 n = t_out * oh * ow * c_out;
  for (i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += i64{gridDim.x} * blockDim.x) {
    const i64 co = i % c_out, pix = i / c_out, ox = pix % ow, oy = pix / ow % oh, to = pix / (ow * oh) + drop;
    const i64 t = to / ft, a = to % ft, p = oy % fs, q = ox % fs;
    const i64 ci = (((co * ft + a) * fs + p) * fs + q) / repeats;
    store1(out, e, i, load1(out, e, i) + load1(in, e, ((t * h + oy / fs) * w + ox / fs) * c_in + ci));
  }
}

// The same for c_out % 8 == 0: 8 output channels of one pixel per thread (one 16- or 32-byte access of out),
// the pixel's coordinates computed once for the 8 and in 32 bits (the caller checks the counts fit): the
// scalar kernel's six 64-bit divisions per element made it instruction-bound, ~9% of a bf16 VAE decode.
__global__ void dup_up8_kernel(void* out, const void* in, Elt e, std::uint32_t pixels, std::uint32_t c8,
                               std::uint32_t h, std::uint32_t w, std::uint32_t c_in, std::uint32_t ft,
                               std::uint32_t fs, std::uint32_t drop, std::uint32_t repeats) {
  const std::uint32_t oh = h * fs, ow = w * fs, n8 = pixels * c8;
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += gridDim.x * blockDim.x) {
    const std::uint32_t cg = i % c8, pix = i / c8, ox = pix % ow, oy = pix / ow % oh, to = pix / (ow * oh) + drop;
    const std::uint32_t t = to / ft, a = to % ft, p = oy % fs, q = ox % fs;
    const i64 src = (i64{t * h + oy / fs} * w + ox / fs) * c_in;
    float v[8];
    load8(out, e, i64{i} * 8, v);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const std::uint32_t co = cg * 8 + k;
      v[k] += load1(in, e, src + (((co * ft + a) * fs + p) * fs + q) / repeats);
    }
    store8(out, e, i64{i} * 8, v);
  }
}

}  // namespace

void upsample_nearest2x(const void* x, void* y, std::size_t elem_bytes, i64 frames_in, i64 h, i64 w, i64 c, int parts) {
  if (frames_in * parts * 4 * h * w * c == 0) return;
  // The widest unit dividing a frame part's channels and both pointers' alignment (float4 for fp32 with
  // c % 4 == 0, as before; 8 bf16).
  const i64 part = c * static_cast<i64>(elem_bytes);
  const auto fits = [&](std::uintptr_t unit) {
    return part % static_cast<i64>(unit) == 0 && reinterpret_cast<std::uintptr_t>(x) % unit == 0 &&
           reinterpret_cast<std::uintptr_t>(y) % unit == 0;
  };
  if (fits(16))
    launch_upsample<uint4>(x, y, frames_in, h, w, part, parts);
  else if (fits(4))
    launch_upsample<std::uint32_t>(x, y, frames_in, h, w, part, parts);
  else
    launch_upsample<std::uint16_t>(x, y, frames_in, h, w, part, parts);
  check_launch("upsample_nearest2x");
}

void add_dup_up(void* out, const void* in, DType dtype, i64 t_out, i64 c_out, i64 h, i64 w, i64 c_in, int ft, int fs,
                int drop) {
  constexpr int kThreads = 256;
  const cudaStream_t stream = current_stream();
  const i64 n = t_out * h * fs * w * fs * c_out;
  if (n == 0) return;
  const i64 pixels = t_out * h * fs * w * fs, repeats = c_out * ft * fs * fs / c_in;
  // 32-bit index math: the output's groups of 8, the channel expression and the input's frames fit in 31 bits.
  const bool fits32 = n / 8 < (i64{1} << 31) && c_out * ft * fs * fs < (i64{1} << 31) &&
                      (t_out + drop) * h * fs * w * fs < (i64{1} << 31);
  if (c_out % 8 == 0 && fits32 && can_vec8(out, dtype)) {
    using u32 = std::uint32_t;
    dup_up8_kernel<<<grid_for(n / 8, kThreads), kThreads, 0, stream>>>(
        out, in, elt_of(dtype), u32(pixels), u32(c_out / 8), u32(h), u32(w), u32(c_in), u32(ft), u32(fs), u32(drop),
        u32(repeats));
  } else {
    dup_up_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(out, in, elt_of(dtype), t_out, c_out, h, w, c_in,
                                                                  ft, fs, drop);
  }
  check_launch("add_dup_up");
}

}  // namespace dattn::ops::cuda
