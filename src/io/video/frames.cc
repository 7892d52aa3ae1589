#include "io/video/frames.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "dattn/core/error.h"

namespace dattn::video_detail {

FrameGeometry frame_geometry(const Tensor& frames, const std::string& path) {
  Shape s = frames.shape();
  if (s.size() == 5 && s[0] == 1) s.erase(s.begin());
  if (s.size() != 4 || s[3] != 3)
    throw UserError(path + ": frames must be [F,H,W,3] or [1,F,H,W,3] RGB, got " + frames.describe());
  if (s[0] < 1 || s[1] < 1 || s[2] < 1) throw UserError(path + ": no pixels to write in " + frames.describe());
  if (frames.dtype() != DType::F32 && frames.dtype() != DType::F64)
    throw UserError(path + ": frames must be fp32 or fp64 values in [0,1], got " + frames.describe());
  return {s[0], s[1], s[2]};
}

namespace {

// The frames as host memory of their own dtype: the tensor itself when it is already there (no copy of
// a 580 MB video), else a host copy.
Tensor on_host(const Tensor& frames) { return frames.device() == Device::CPU ? frames : frames.to(Device::CPU); }

template <class T>
NonFiniteValues find_nonfinite_values(const T* v, std::size_t n) {
  NonFiniteValues found;
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i]) && found.count++ == 0) found.first = i;
  return found;
}

template <class T>
std::vector<std::uint8_t> quantize(const T* v, std::size_t n, const std::string& path) {
  std::vector<std::uint8_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(v[i]))  // require_finite ran first; this keeps quantize_frames safe on its own
      throw NumericError(path + ": frame value " + std::to_string(i) + " is NaN; nothing written");
    const T x = std::clamp(v[i], T(0), T(1)) * T(255);
    out[i] = static_cast<std::uint8_t>(std::nearbyint(x));  // default rounding: ties to even, like np.round
  }
  return out;
}

}  // namespace

NonFiniteValues find_nonfinite(const Tensor& frames) {
  const Tensor h = on_host(frames);
  const auto n = static_cast<std::size_t>(h.numel());
  if (h.dtype() == DType::F64) return find_nonfinite_values(h.data_as<double>(), n);
  if (h.dtype() == DType::F32) return find_nonfinite_values(h.data_as<float>(), n);
  return find_nonfinite_values(h.to(DType::F32).data_as<float>(), n);
}

void throw_nonfinite(const NonFiniteValues& bad, std::size_t values, const FrameGeometry& g, const std::string& path) {
  // Position of the first one in [F, H, W, 3].
  const auto first = static_cast<std::int64_t>(bad.first);
  const std::int64_t c = first % 3, x = first / 3 % g.width, y = first / 3 / g.width % g.height,
                     f = first / 3 / g.width / g.height;
  throw NumericError(path + ": " + std::to_string(bad.count) + " of " + std::to_string(values) +
                     " frame values are NaN or Inf (the first at frame " + std::to_string(f) + ", row " +
                     std::to_string(y) + ", column " + std::to_string(x) + ", channel " + std::to_string(c) +
                     "); nothing written");
}

std::vector<std::uint8_t> quantize_frames(const Tensor& frames, const std::string& path) {
  const Tensor h = on_host(frames);
  const auto n = static_cast<std::size_t>(h.numel());
  if (h.dtype() == DType::F64) return quantize(h.data_as<double>(), n, path);
  if (h.dtype() == DType::F32) return quantize(h.data_as<float>(), n, path);
  return quantize(h.to(DType::F32).data_as<float>(), n, path);
}

}  // namespace dattn::video_detail
