#pragma once
// The CPU kernel of ops::CausalConv3d: a stride-1 3D cross-correlation over channels-last frames, zero
// (or edge-replicating) padding (k - 1) / 2 in space, none in time (the caller puts the causal frames in front), in float32:
// im2col + cblas_sgemm. Frames are passed as pointers so that cached frames and the causal zero frames
// (null pointers, skipped rather than multiplied) precede a chunk without copies.
#include <cstddef>

namespace dattn::ops::cpu {

struct Conv3dGeometry {
  int cin = 0, cout = 0;
  int kt = 1, k = 1;  // kernel (kt, k, k), k odd
  int h = 0, w = 0;   // frame size (the output's too)
  bool replicate = false;  // spatial padding repeats the edge pixels instead of zeros
};

// Column buffer size above which an output frame is processed in bands of rows (bounds memory at
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

// out_frames[t] [h, w, cout], t in [0, n_in - kt], receives
//   bias + sum over dt < kt of  W[:, dt] (*) in_frames[t + dt]     (2D cross-correlation, zero padded)
// where each in_frames entry is a [h, w, cin] frame or null for an all-zero frame; null frames may only
// lead the sequence (the causal padding). `weight` is [cout, kt, k, k, cin]; `bias` may be null. Output
// frames must not alias input frames. Parallel over OpenMP threads (OpenBLAS single-threaded inside).
void conv3d_frames(const Conv3dGeometry& g, const float* weight, const float* bias, const float* const* in_frames,
                   int n_in, float* const* out_frames, std::size_t scratch_bytes = kConv3dDefaultScratchBytes);

}  // namespace dattn::ops::cpu
