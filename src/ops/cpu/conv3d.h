#pragma once
// 3D convolution (stride 1, zero padding in space) over a sequence of frames, in float32 on the CPU:
// im2col + cblas_sgemm. Frames are passed as pointers so that a causal convolution can put cached frames
// and its zero time padding (a null pointer) in front of a chunk without copying. A 2D convolution is
// the case kt = 1 with one input frame.
#include <cstddef>
#include <vector>

namespace dattn::ops {

struct Conv3dGeometry {
  int cin = 0, cout = 0;
  int kt = 1, kh = 1, kw = 1;
  int h = 0, w = 0;          // input frame size
  int pad_h = 0, pad_w = 0;  // zero padding on both sides of each spatial dimension
  int out_h() const { return h + 2 * pad_h - kh + 1; }
  int out_w() const { return w + 2 * pad_w - kw + 1; }
};

// Reorders a PyTorch Conv3d weight [cout, cin, kt, kh, kw] (a Conv2d weight when kt = 1) into
// [cout, kt, cin, kh, kw]: the taps that read one input frame then form one block of columns, so the
// taps that fall on zero (null) frames can be skipped instead of multiplied by zeros. `packed` holds
// cout * kt * cin * kh * kw floats. For kt = 1 the two layouts are the same (a plain copy).
void conv3d_pack_weight(const float* torch_weight, const Conv3dGeometry& g, float* packed);

// Column buffer size above which the output frame is processed in bands of rows (bounds memory at
// video resolutions: a 3x3x3 conv over 1024 channels needs 110 KB of columns per output pixel).
inline constexpr std::size_t kConv3dDefaultScratchBytes = std::size_t{32} << 20;

// While alive, OpenBLAS runs single-threaded, for callers that split GEMMs over OpenMP threads
// themselves (conv3d_frames does). Restores the previous thread count; not for concurrent use.
class BlasSingleThread {
 public:
  BlasSingleThread();
  ~BlasSingleThread();
  BlasSingleThread(const BlasSingleThread&) = delete;
  BlasSingleThread& operator=(const BlasSingleThread&) = delete;

 private:
  int previous_;
};

// out_frames[t], t in [0, n_in - kt], each [cout, out_h, out_w], receives
//   bias + sum over dt < kt of  W[:, :, dt] (*) in_frames[t + dt]     (2D cross-correlation, zero padded)
// where each in_frames entry is a [cin, h, w] frame or null for an all-zero frame. `packed_weight` comes
// from conv3d_pack_weight; `bias` may be null. Output frames must not alias input frames.
// Parallel over OpenMP threads (OpenBLAS single-threaded inside, see BlasSingleThread).
void conv3d_frames(const Conv3dGeometry& g, const float* packed_weight, const float* bias,
                   const float* const* in_frames, int n_in, float* const* out_frames,
                   std::size_t scratch_bytes = kConv3dDefaultScratchBytes);

}  // namespace dattn::ops
