// The frame ops of the causal VAEs (ops/frames.h) and normalize_channels and softmax, on the CPU and CUDA
// (in a poisoning context), against references written from diffusers' definitions in float64:
// upsampling as index arithmetic, DupUp3D as repeat_interleave + view + permute, unpatchify as
// diffusers' view + permute. NaN propagation is checked where the ops promise it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/ops/frames.h"
#include "dattn/ops/norm.h"
#include "dattn/ops/softmax.h"
#include "ops/frame_test_util.h"

namespace dattn {
namespace {

using testing::compare_f64;
using testing::frame_op_devices;
using testing::FrameOpDevice;
using testing::random_f32;
using i64 = std::int64_t;

TEST(FrameOps, UpsampleNearest2xSplitsPartsIntoFrames) {
  std::mt19937 rng(1);
  for (const Device d : frame_op_devices())
    for (const int parts : {1, 2}) {
      SCOPED_TRACE(std::string(device_name(d)) + " parts " + std::to_string(parts));
      const i64 t = 2, h = 3, w = 5, c = 6;  // c = 6: the scalar path on CUDA for parts 2 (3 channels)
      const Tensor x = random_f32({t, h, w, c}, rng);
      const std::vector<double> xv = x.to_f64_vector();
      const i64 co = c / parts;
      std::vector<double> ref;
      for (i64 fo = 0; fo < t * parts; ++fo)
        for (i64 oy = 0; oy < 2 * h; ++oy)
          for (i64 ox = 0; ox < 2 * w; ++ox)
            for (i64 ch = 0; ch < co; ++ch)
              ref.push_back(xv[((fo / parts * h + oy / 2) * w + ox / 2) * c + (fo % parts) * co + ch]);
      const FrameOpDevice dev(d);
      const Tensor y = ops::upsample_nearest2x(dev.put(x), parts);
      EXPECT_EQ(y.shape(), (Shape{t * parts, 2 * h, 2 * w, co}));
      EXPECT_EQ(compare_f64(y, ref, 0.0), "");
    }
}

// diffusers' DupUp3D on [C, T, H, W] (batch 1): repeat_interleave(repeats, channels), view as [Cout, ft,
// fs, fs, T, H, W], permute to [Cout, T, ft, H, fs, W, fs], reshape to [Cout, T ft, H fs, W fs], drop.
std::vector<double> dup_up_reference(const std::vector<double>& in_thwc, i64 t, i64 h, i64 w, i64 cin, i64 cout,
                                     int ft, int fs, int drop) {
  const i64 repeats = cout * ft * fs * fs / cin;
  std::vector<double> rep(static_cast<std::size_t>(cin * repeats * t * h * w));  // [cin * repeats, T, H, W]
  for (i64 r = 0; r < cin * repeats; ++r)
    for (i64 f = 0; f < t; ++f)
      for (i64 p = 0; p < h * w; ++p) rep[(r * t + f) * h * w + p] = in_thwc[(f * h * w + p) * cin + r / repeats];
  const i64 to_n = t * ft - drop;
  std::vector<double> out(static_cast<std::size_t>(to_n * h * fs * w * fs * cout));  // [T', H', W', Cout]
  for (i64 co = 0; co < cout; ++co)
    for (i64 f = 0; f < t; ++f)
      for (i64 a = 0; a < ft; ++a)
        for (i64 y = 0; y < h; ++y)
          for (i64 p = 0; p < fs; ++p)
            for (i64 x = 0; x < w; ++x)
              for (i64 q = 0; q < fs; ++q) {
                const i64 to = f * ft + a - drop;
                if (to < 0) continue;
                const i64 src_ch = ((co * ft + a) * fs + p) * fs + q;  // the view's [Cout, ft, fs, fs] index
                out[((to * h * fs + y * fs + p) * w * fs + x * fs + q) * cout + co] = rep[(src_ch * t + f) * h * w + y * w + x];
              }
  return out;
}

TEST(FrameOps, AddDupUpMatchesDiffusersDupUp3D) {
  std::mt19937 rng(2);
  struct Case {
    i64 t, h, w, cin, cout;
    int ft, fs, drop;
  };
  for (const Device d : frame_op_devices())
    for (const Case& c : {Case{2, 2, 3, 8, 4, 2, 2, 1}, Case{2, 2, 3, 8, 4, 2, 2, 0}, Case{1, 3, 2, 6, 6, 1, 2, 0},
                          // Output channels in 8s: CUDA's 8-wide kernel.
                          Case{2, 2, 3, 16, 8, 2, 2, 1}, Case{3, 2, 2, 32, 16, 2, 2, 0}, Case{1, 3, 2, 32, 16, 1, 2, 0}}) {
      SCOPED_TRACE(std::string(device_name(d)) + " cin " + std::to_string(c.cin) + " drop " + std::to_string(c.drop));
      const Tensor in = random_f32({c.t, c.h, c.w, c.cin}, rng);
      const Tensor base = random_f32({c.t * c.ft - c.drop, c.h * c.fs, c.w * c.fs, c.cout}, rng);
      std::vector<double> ref = dup_up_reference(in.to_f64_vector(), c.t, c.h, c.w, c.cin, c.cout, c.ft, c.fs, c.drop);
      const std::vector<double> bv = base.to_f64_vector();
      for (std::size_t i = 0; i < ref.size(); ++i) ref[i] += bv[i];
      const FrameOpDevice dev(d);
      Tensor out = dev.put(base);
      ops::add_dup_up(out, dev.put(in), c.ft, c.fs, c.drop);
      EXPECT_EQ(compare_f64(out, ref, 1e-7), "");
    }
}

TEST(FrameOps, WriteUnpatchifiedFramesUndoesDiffusersPatchify) {
  std::mt19937 rng(3);
  const i64 n = 2, h = 3, w = 2, channels = 3, patch = 2, frames = 4, t0 = 1, b = 1;
  for (const Device d : frame_op_devices()) {
    SCOPED_TRACE(device_name(d));
    Tensor chunk = random_f32({n, h, w, channels * patch * patch}, rng, 0.8f);
    std::vector<float> cv = chunk.to_f32_vector();
    cv[5] = std::numeric_limits<float>::quiet_NaN();  // stays NaN through the clamp
    chunk = Tensor::from_f32(cv, chunk.shape());
    const FrameOpDevice dev(d);
    Tensor video = dev.put(Tensor::zeros({2, channels, frames, h * patch, w * patch}, DType::F32));
    ops::write_unpatchified_frames(dev.put(chunk), static_cast<int>(patch), video, b, t0);
    // diffusers: [B, C, p(r), p(q), F, H, W] permuted to [B, C, F, H, q, W, r]: video (Y = y p + q,
    // X = x p + r) holds patch channel c p^2 + r p + q.
    const std::vector<double> got = video.to_f64_vector();
    int nan_seen = 0, bad = 0;
    for (i64 c = 0; c < channels; ++c)
      for (i64 f = 0; f < n; ++f)
        for (i64 y = 0; y < h; ++y)
          for (i64 q = 0; q < patch; ++q)
            for (i64 x = 0; x < w; ++x)
              for (i64 r = 0; r < patch; ++r) {
                const double src = cv[((f * h + y) * w + x) * channels * patch * patch + c * patch * patch + r * patch + q];
                const double v = got[(((b * channels + c) * frames + t0 + f) * h * patch + y * patch + q) * w * patch +
                                     x * patch + r];
                if (std::isnan(src)) {
                  nan_seen += std::isnan(v);
                  continue;
                }
                if (v != std::clamp(src, -1.0, 1.0)) ++bad;
              }
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(nan_seen, 1) << "a NaN is written as NaN, not clamped away";
    EXPECT_THROW(ops::write_unpatchified_frames(dev.put(chunk), 2, video, 0, frames - 1), UserError);  // past the end
  }
}

// diffusers' postprocess: (x * 0.5 + 0.5) clamped to [0, 1], channels last; exact (the * 0.5 is), NaN
// and Inf stay as they are; an odd pixel count (no 8-wide shortcut can hide a tail error) and values
// beyond [-1, 1].
TEST(FrameOps, VideoToRgbFramesIsDiffusersPostprocess) {
  std::mt19937 rng(4);
  const i64 c = 3, f = 3, h = 5, w = 7;
  for (const Device d : frame_op_devices()) {
    SCOPED_TRACE(device_name(d));
    Tensor video = random_f32({1, c, f, h, w}, rng, 1.5f);
    std::vector<float> v = video.to_f32_vector();
    v[17] = std::numeric_limits<float>::quiet_NaN();
    v[23] = std::numeric_limits<float>::infinity();
    v[40] = -std::numeric_limits<float>::infinity();
    video = Tensor::from_f32(v, video.shape());
    const FrameOpDevice dev(d);
    const Tensor frames = ops::video_to_rgb_frames(dev.put(video));
    ASSERT_EQ(frames.shape(), (Shape{f, h, w, c}));
    EXPECT_EQ(frames.device(), d);
    const std::vector<float> got = frames.to_f32_vector();
    const i64 plane = f * h * w;
    int bad = 0, nan_seen = 0, inf_kept = 0;
    for (i64 ch = 0; ch < c; ++ch)
      for (i64 i = 0; i < plane; ++i) {
        const float src = v[ch * plane + i], out = got[i * c + ch];
        if (std::isnan(src)) {
          nan_seen += std::isnan(out);
          continue;
        }
        if (std::isinf(src)) {
          inf_kept += out == src;
          continue;
        }
        if (out != std::clamp(src * 0.5f + 0.5f, 0.0f, 1.0f)) ++bad;
      }
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(nan_seen, 1) << "a NaN is written as NaN, not clamped away";
    EXPECT_EQ(inf_kept, 2) << "an Inf is kept for the caller's check, not clamped to 0 or 1";
    EXPECT_THROW(ops::video_to_rgb_frames(dev.put(Tensor::zeros({2, c, f, h, w}, DType::F32))), UserError);  // batch 2
  }
}

// A range of frames (what a streaming decode takes) is exactly those frames of the whole conversion;
// a range outside the video is a UserError.
TEST(FrameOps, VideoToRgbFramesOfARangeAreThoseOfTheWhole) {
  std::mt19937 rng(5);
  const i64 c = 3, f = 5, h = 3, w = 5;
  for (const Device d : frame_op_devices()) {
    SCOPED_TRACE(device_name(d));
    const FrameOpDevice dev(d);
    const Tensor video = dev.put(random_f32({1, c, f, h, w}, rng, 1.5f));
    const std::vector<float> whole = ops::video_to_rgb_frames(video).to_f32_vector();
    const i64 frame = h * w * c;
    for (const auto& [first, count] : std::vector<std::pair<i64, i64>>{{0, 1}, {1, 4}, {2, 2}, {4, 1}, {5, 0}}) {
      const Tensor part = ops::video_to_rgb_frames(video, first, count);
      ASSERT_EQ(part.shape(), (Shape{count, h, w, c}));
      EXPECT_EQ(part.to_f32_vector(), std::vector<float>(whole.begin() + first * frame,
                                                         whole.begin() + (first + count) * frame))
          << "frames [" << first << ", " << first + count << ")";
    }
    EXPECT_EQ(ops::video_to_rgb_frames(video, 3).dim(0), 2) << "count -1: to the end";
    EXPECT_THROW(ops::video_to_rgb_frames(video, 4, 2), UserError);
    EXPECT_THROW(ops::video_to_rgb_frames(video, -1, 1), UserError);
    EXPECT_THROW(ops::video_to_rgb_frames(video, 6), UserError);
  }
}

TEST(FrameOps, NormalizeChannelsAndSoftmaxMatchFloat64) {
  std::mt19937 rng(4);
  for (const Device d : frame_op_devices())
    for (const i64 c : {6, 64}) {
      SCOPED_TRACE(std::string(device_name(d)) + " c " + std::to_string(c));
      const Tensor x = random_f32({3, 5, c}, rng), gain = random_f32({c}, rng);
      const std::vector<double> xv = x.to_f64_vector(), gv = gain.to_f64_vector();
      std::vector<double> norm(xv.size()), silu(xv.size()), soft(xv.size());
      const double scale = 0.7;
      for (std::size_t p = 0; p < xv.size() / c; ++p) {
        double s = 0, mx = -1e300, sum = 0;
        for (i64 i = 0; i < c; ++i) s += xv[p * c + i] * xv[p * c + i], mx = std::max(mx, scale * xv[p * c + i]);
        for (i64 i = 0; i < c; ++i) {
          norm[p * c + i] = xv[p * c + i] / std::max(std::sqrt(s), 1e-12) * gv[i];
          silu[p * c + i] = norm[p * c + i] / (1 + std::exp(-norm[p * c + i]));
          sum += std::exp(scale * xv[p * c + i] - mx);
        }
        for (i64 i = 0; i < c; ++i) soft[p * c + i] = std::exp(scale * xv[p * c + i] - mx) / sum;
      }
      const FrameOpDevice dev(d);
      EXPECT_EQ(compare_f64(ops::normalize_channels(dev.put(x), dev.put(gain), false), norm, 2e-6), "");
      EXPECT_EQ(compare_f64(ops::normalize_channels(dev.put(x), dev.put(gain), true), silu, 2e-6), "");
      EXPECT_EQ(compare_f64(ops::softmax(dev.put(x), static_cast<float>(scale)), soft, 2e-6), "");
      // A NaN in a row makes that row NaN in both.
      std::vector<float> xn = x.to_f32_vector();
      xn[1] = std::numeric_limits<float>::quiet_NaN();
      const Tensor with_nan = dev.put(Tensor::from_f32(xn, x.shape()));
      for (const Tensor& y : {ops::normalize_channels(with_nan, dev.put(gain), true), ops::softmax(with_nan)}) {
        const std::vector<float> v = y.to_f32_vector();
        for (i64 i = 0; i < c; ++i) EXPECT_TRUE(std::isnan(v[i])) << "element " << i << " of the NaN row";
        EXPECT_FALSE(std::isnan(v[c])) << "the next row stays finite";
      }
    }
}

TEST(FrameOps, BadShapesAreClearErrors) {
  std::mt19937 rng(5);
  EXPECT_THROW(ops::upsample_nearest2x(random_f32({2, 3, 5}, rng)), UserError);
  EXPECT_THROW(ops::upsample_nearest2x(random_f32({1, 2, 2, 3}, rng), 2), UserError);
  Tensor out = random_f32({3, 4, 4, 4}, rng);
  EXPECT_THROW(ops::add_dup_up(out, random_f32({2, 2, 2, 8}, rng), 2, 2, 0), UserError);  // 4 frames, not 3
  EXPECT_THROW(ops::normalize_channels(random_f32({2, 4}, rng), random_f32({3}, rng), false), UserError);
  EXPECT_THROW(ops::softmax(random_f32({2, 4}, rng).to(DType::BF16)), UserError);
}

}  // namespace
}  // namespace dattn
