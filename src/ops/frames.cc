// Dispatch of the frame ops (upsample_nearest2x, add_dup_up, dcae_upsample, write_unpatchified_frames,
// video_to_rgb_frames) and softmax.
#include "dattn/ops/frames.h"

#include <string>

#include "dattn/core/error.h"
#include "dattn/core/stage_timer.h"
#include "dattn/ops/softmax.h"
#include "ops/checks.h"
#include "ops/cpu/cpu_ops.h"
#ifdef DATTN_WITH_CUDA
#include "ops/cuda/frame_kernels.h"
#endif

namespace dattn::ops {
namespace {

// Frames are float32, or bfloat16 on CUDA (the causal VAEs' bf16 decode).
void require_frames(const char* op, const char* arg, const Tensor& t) {
  if (t.device() == Device::CPU || t.dtype() != DType::BF16) detail::require_f32(op, arg, t);
  detail::require_ndim(op, arg, t, 4, "[T, H, W, C]");
}

void require_same_dtype(const char* op, const Tensor& first, const char* arg, const Tensor& t) {
  if (t.dtype() != first.dtype())
    throw UserError(std::string(op) + ": " + arg + " " + t.describe() + ": expected " +
                    std::string(dtype_name(first.dtype())) + " as " + first.describe());
}

[[noreturn]] void mismatch(const char* op, const std::string& what) { throw UserError(std::string(op) + ": " + what); }

}  // namespace

Tensor upsample_nearest2x(const Tensor& x, int parts) {
  const StageScope timed("upsample_nearest2x");
  constexpr const char* op = "upsample_nearest2x";
  require_frames(op, "x", x);
  if (parts < 1 || x.dim(3) % parts != 0)
    mismatch(op, "parts " + std::to_string(parts) + " does not divide the " + std::to_string(x.dim(3)) + " channels");
  switch (x.device()) {
    case Device::CPU: return cpu::upsample_nearest2x(x, parts);
    case Device::CUDA: {
#ifdef DATTN_WITH_CUDA
      const std::int64_t c = x.dim(3) / parts;
      Tensor y = Tensor::empty({x.dim(0) * parts, 2 * x.dim(1), 2 * x.dim(2), c}, x.dtype(), Device::CUDA);
      cuda::upsample_nearest2x(x.data(), y.data(), dtype_size(x.dtype()), x.dim(0), x.dim(1), x.dim(2), c, parts);
      return y;
#else
      break;
#endif
    }
  }
  detail::no_kernel(op, x.device());
}

void add_dup_up(Tensor& out, const Tensor& in, int factor_t, int factor_s, int drop) {
  const StageScope timed("add_dup_up");
  constexpr const char* op = "add_dup_up";
  require_frames(op, "out", out);
  require_frames(op, "in", in);
  detail::require_same_device(op, out, "in", in);
  require_same_dtype(op, out, "in", in);
  const std::int64_t factor = std::int64_t{factor_t} * factor_s * factor_s;
  if (factor_t < 1 || factor_s < 1 || drop < 0 || drop >= factor_t || (out.dim(3) * factor) % in.dim(3) != 0 ||
      out.dim(0) != in.dim(0) * factor_t - drop || out.dim(1) != in.dim(1) * factor_s ||
      out.dim(2) != in.dim(2) * factor_s)
    mismatch(op, "input " + in.describe() + " does not map onto " + out.describe() + " with factors " +
                     std::to_string(factor_t) + "x" + std::to_string(factor_s) + " and " + std::to_string(drop) +
                     " dropped frames");
  switch (out.device()) {
    case Device::CPU: return cpu::add_dup_up(out, in, factor_t, factor_s, drop);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::add_dup_up(out.data(), in.data(), out.dtype(), out.dim(0), out.dim(3), in.dim(1), in.dim(2),
                              in.dim(3), factor_t, factor_s, drop);
#else
      break;
#endif
  }
  detail::no_kernel(op, out.device());
}

Tensor dcae_upsample(const Tensor& h, const Tensor& x, int factor_t, bool first_frame) {
  const StageScope timed("dcae_upsample");
  constexpr const char* op = "dcae_upsample";
  require_frames(op, "h", h);
  require_frames(op, "x", x);
  detail::require_same_device(op, h, "x", x);
  require_same_dtype(op, h, "x", x);
  const std::int64_t groups = std::int64_t{4} * factor_t, cin = x.dim(3);
  const std::int64_t cout = (factor_t == 1 || factor_t == 2) ? h.dim(3) / groups : 0;
  if (cout <= 0 || h.dim(3) != groups * cout)
    mismatch(op, "h " + h.describe() + " with factor_t " + std::to_string(factor_t) +
                     ": expected factor_t 1 or 2 and channels a positive multiple of 4 * factor_t");
  if (h.dim(0) != x.dim(0) || h.dim(1) != x.dim(1) || h.dim(2) != x.dim(2) || (groups * cout) % cin != 0 ||
      (first_frame && (4 * cout) % cin != 0))
    mismatch(op, "x " + x.describe() + " does not match h " + h.describe() + ": expected the same frames and " +
                     "pixels, and 4 * factor_t * Cout (and 4 * Cout with first_frame) a multiple of its channels");
  if (first_frame && factor_t != 2) mismatch(op, "first_frame needs factor_t 2, got " + std::to_string(factor_t));
  if (first_frame && h.dim(0) == 0) mismatch(op, "first_frame on an empty chunk " + h.describe());
  const std::int64_t frames = factor_t * h.dim(0) - (first_frame ? 1 : 0);
  Tensor out = Tensor::empty({frames, 2 * h.dim(1), 2 * h.dim(2), cout}, h.dtype(), h.device());
  switch (h.device()) {
    case Device::CPU: cpu::dcae_upsample(h, x, factor_t, first_frame, out); return out;
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      cuda::dcae_upsample(h.data(), x.data(), out.data(), h.dtype(), h.dim(0), h.dim(1), h.dim(2), cout, cin, factor_t,
                          first_frame);
      return out;
#else
      break;
#endif
  }
  detail::no_kernel(op, h.device());
}

void write_unpatchified_frames(const Tensor& chunk, int patch, Tensor& video, std::int64_t b, std::int64_t t0,
                               bool clamp) {
  const StageScope timed("write_unpatchified_frames");
  constexpr const char* op = "write_unpatchified_frames";
  require_frames(op, "chunk", chunk);
  detail::require_f32(op, "video", video);
  detail::require_ndim(op, "video", video, 5, "[B, C, T, H, W]");
  detail::require_same_device(op, video, "chunk", chunk);
  if (patch < 1 || chunk.dim(3) != video.dim(1) * patch * patch || chunk.dim(1) * patch != video.dim(3) ||
      chunk.dim(2) * patch != video.dim(4) || b < 0 || b >= video.dim(0) || t0 < 0 ||
      t0 + chunk.dim(0) > video.dim(2))
    mismatch(op, "chunk " + chunk.describe() + " with patch " + std::to_string(patch) + " at batch " +
                     std::to_string(b) + ", frame " + std::to_string(t0) + " does not fit " + video.describe());
  switch (video.device()) {
    case Device::CPU: return cpu::write_unpatchified_frames(chunk, patch, video, b, t0, clamp);
    case Device::CUDA:
#ifdef DATTN_WITH_CUDA
      return cuda::unpatchify_clamp(chunk.data(), chunk.dtype(), video.data_as<float>(), chunk.dim(0), chunk.dim(1),
                                    chunk.dim(2), patch, video.dim(1), video.dim(2), b, t0, clamp);
#else
      break;
#endif
  }
  detail::no_kernel(op, video.device());
}

Tensor softmax(const Tensor& x, float scale) {
  const StageScope timed("softmax");
  constexpr const char* op = "softmax";
  detail::require_f32(op, "x", x);
  if (x.ndim() < 1) mismatch(op, "x " + x.describe() + " has no last dimension");
  switch (x.device()) {
    case Device::CPU: return cpu::softmax(x, scale);
    case Device::CUDA: {
#ifdef DATTN_WITH_CUDA
      Tensor y = x.clone();
      const std::int64_t cols = x.dim(-1);
      cuda::softmax_rows(y.data_as<float>(), cols ? x.numel() / cols : 0, cols, scale);
      return y;
#else
      break;
#endif
    }
  }
  detail::no_kernel(op, x.device());
}

Tensor video_to_rgb_frames(const Tensor& video, std::int64_t first, std::int64_t count) {
  const StageScope timed("video_to_rgb_frames");
  constexpr const char* op = "video_to_rgb_frames";
  detail::require_f32(op, "video", video);
  detail::require_ndim(op, "video", video, 5, "[1, C, F, H, W]");
  if (video.dim(0) != 1) mismatch(op, "video " + video.describe() + ": expected one video (batch 1)");
  const std::int64_t f = video.dim(2);
  if (count < 0) count = f - first;
  if (first < 0 || first > f || count < 0 || count > f - first)
    mismatch(op, "frames [" + std::to_string(first) + ", " + std::to_string(first + count) + ") of video " +
                     video.describe() + ": expected a range within its " + std::to_string(f) + " frames");
  switch (video.device()) {
    case Device::CPU: return cpu::video_to_rgb_frames(video, first, count);
    case Device::CUDA: {
#ifdef DATTN_WITH_CUDA
      const std::int64_t c = video.dim(1), h = video.dim(3), w = video.dim(4);
      Tensor frames = Tensor::empty({count, h, w, c}, DType::F32, Device::CUDA);
      cuda::video_to_rgb_frames(video.data_as<float>() + first * h * w, frames.data_as<float>(), c, count * h * w,
                                f * h * w);
      return frames;
#else
      break;
#endif
    }
  }
  detail::no_kernel(op, video.device());
}

}  // namespace dattn::ops
