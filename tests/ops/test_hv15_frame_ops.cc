// The frame ops HunyuanVideo-1.5's VAE adds (dcae_upsample, transpose2d, the unclamped frame writer) on
// the CPU and CUDA (in a poisoning context), against references written from diffusers' definitions in
// float64: HunyuanVideo15Upsample.forward as its view + permute (_dcae_upsample_rearrange),
// repeat_interleave and cat on [C, T, H, W] tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/ops/frames.h"
#include "dattn/ops/transpose.h"
#include "ops/frame_test_util.h"

namespace dattn {
namespace {

using testing::compare_f64;
using testing::frame_op_devices;
using testing::FrameOpDevice;
using testing::random_f32;
using i64 = std::int64_t;

// A [C, T, H, W] float64 volume (batch 1, diffusers' layout).
struct Vol {
  i64 c = 0, t = 0, h = 0, w = 0;
  std::vector<double> v;
  double& at(i64 ci, i64 f, i64 y, i64 x) { return v[((ci * t + f) * h + y) * w + x]; }
  double at(i64 ci, i64 f, i64 y, i64 x) const { return v[((ci * t + f) * h + y) * w + x]; }
};
Vol make(i64 c, i64 t, i64 h, i64 w) {
  return {c, t, h, w, std::vector<double>(static_cast<std::size_t>(c * t * h * w))};
}

Vol from_thwc(const Tensor& x) {
  const std::vector<double> s = x.to_f64_vector();
  Vol v = make(x.dim(3), x.dim(0), x.dim(1), x.dim(2));
  for (i64 f = 0; f < v.t; ++f)
    for (i64 y = 0; y < v.h; ++y)
      for (i64 xx = 0; xx < v.w; ++xx)
        for (i64 c = 0; c < v.c; ++c) v.at(c, f, y, xx) = s[((f * v.h + y) * v.w + xx) * v.c + c];
  return v;
}
std::vector<double> to_thwc(const Vol& v) {
  std::vector<double> out;
  for (i64 f = 0; f < v.t; ++f)
    for (i64 y = 0; y < v.h; ++y)
      for (i64 x = 0; x < v.w; ++x)
        for (i64 c = 0; c < v.c; ++c) out.push_back(v.at(c, f, y, x));
  return out;
}
Vol frames(const Vol& v, i64 f0, i64 n) {
  Vol o = make(v.c, n, v.h, v.w);
  for (i64 c = 0; c < v.c; ++c)
    for (i64 f = 0; f < n; ++f)
      for (i64 y = 0; y < v.h; ++y)
        for (i64 x = 0; x < v.w; ++x) o.at(c, f, y, x) = v.at(c, f0 + f, y, x);
  return o;
}
Vol channels(const Vol& v, i64 n) {  // the first n channels
  Vol o = make(n, v.t, v.h, v.w);
  std::copy(v.v.begin(), v.v.begin() + n * v.t * v.h * v.w, o.v.begin());
  return o;
}
// _dcae_upsample_rearrange: view (r1, r2, r3, c, f, h, w), permute to (c, f, r1, h, r2, w, r3), reshape.
Vol rearrange(const Vol& in, i64 r1) {
  const i64 c = in.c / (r1 * 4);
  Vol o = make(c, in.t * r1, in.h * 2, in.w * 2);
  for (i64 a = 0; a < r1; ++a)
    for (i64 p = 0; p < 2; ++p)
      for (i64 q = 0; q < 2; ++q)
        for (i64 ci = 0; ci < c; ++ci)
          for (i64 f = 0; f < in.t; ++f)
            for (i64 y = 0; y < in.h; ++y)
              for (i64 x = 0; x < in.w; ++x)
                o.at(ci, f * r1 + a, y * 2 + p, x * 2 + q) = in.at(((a * 2 + p) * 2 + q) * c + ci, f, y, x);
  return o;
}
Vol repeat_interleave(const Vol& in, i64 r) {
  Vol o = make(in.c * r, in.t, in.h, in.w);
  const i64 plane = in.t * in.h * in.w;
  for (i64 j = 0; j < o.c; ++j)
    std::copy(in.v.begin() + j / r * plane, in.v.begin() + (j / r + 1) * plane, o.v.begin() + j * plane);
  return o;
}
Vol cat_frames(const Vol& a, const Vol& b) {
  Vol o = make(a.c, a.t + b.t, a.h, a.w);
  for (i64 c = 0; c < a.c; ++c)
    for (i64 f = 0; f < o.t; ++f)
      for (i64 y = 0; y < a.h; ++y)
        for (i64 x = 0; x < a.w; ++x) o.at(c, f, y, x) = f < a.t ? a.at(c, f, y, x) : b.at(c, f - a.t, y, x);
  return o;
}
Vol sum(const Vol& a, const Vol& b) {
  Vol o = a;
  for (std::size_t i = 0; i < o.v.size(); ++i) o.v[i] += b.v[i];
  return o;
}

// HunyuanVideo15Upsample.forward after its conv, for a chunk whose first frame is (first_frame) or is not
// the video's first; a later chunk takes the h_next / x_next branch for all its frames.
Vol upsample_reference(const Vol& h, const Vol& x, i64 cout, int ft, bool first_frame) {
  if (ft == 1) return sum(rearrange(h, 1), rearrange(repeat_interleave(x, 4 * cout / x.c), 1));
  const i64 repeats = 8 * cout / x.c;
  if (!first_frame) return sum(rearrange(h, 2), repeat_interleave(rearrange(x, 2), repeats));
  Vol hf = rearrange(frames(h, 0, 1), 1);
  hf = channels(hf, hf.c / 2);
  Vol xf = repeat_interleave(rearrange(frames(x, 0, 1), 1), repeats / 2);
  if (h.t == 1) return sum(hf, xf);
  const Vol hn = rearrange(frames(h, 1, h.t - 1), 2),
            xn = repeat_interleave(rearrange(frames(x, 1, x.t - 1), 2), repeats);
  return sum(cat_frames(hf, hn), cat_frames(xf, xn));
}

TEST(Hv15FrameOps, DcaeUpsampleMatchesDiffusersUpsample) {
  std::mt19937 rng(5);
  struct Case {
    i64 t, h, w, cin, cout;
    int ft;
    bool first;
  };
  // HunyuanVideo-1.5's four up-samplers (1024->1024 and 1024->512 in time and space, 512->256 and 256->128
  // in space), scaled down: repeats 8, 4 (halved for the first frame) and 2, one frame and several.
  const std::vector<Case> cases = {{1, 2, 3, 16, 16, 2, true}, {3, 2, 3, 16, 16, 2, true}, {2, 3, 2, 16, 16, 2, false},
                                   {3, 2, 2, 16, 8, 2, true},  {1, 2, 2, 16, 8, 2, false}, {2, 3, 2, 8, 4, 1, false},
                                   {1, 2, 3, 8, 8, 1, false},  {2, 2, 2, 8, 16, 1, false}};
  for (const Device d : frame_op_devices())
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(device_name(d)) + " t " + std::to_string(c.t) + " " + std::to_string(c.cin) + "->" +
                   std::to_string(c.cout) + " ft " + std::to_string(c.ft) + (c.first ? " first" : ""));
      const Tensor h = random_f32({c.t, c.h, c.w, 4 * c.ft * c.cout}, rng), x = random_f32({c.t, c.h, c.w, c.cin}, rng);
      const Vol ref = upsample_reference(from_thwc(h), from_thwc(x), c.cout, c.ft, c.first);
      const FrameOpDevice dev(d);
      const Tensor y = ops::dcae_upsample(dev.put(h), dev.put(x), c.ft, c.first);
      EXPECT_EQ(y.shape(), (Shape{ref.t, ref.h, ref.w, ref.c}));
      EXPECT_EQ(y.device(), d);
      EXPECT_EQ(compare_f64(y, to_thwc(ref), 1e-7), "");  // one float32 addition per element
    }
}

TEST(Hv15FrameOps, DcaeUpsampleRejectsMismatches) {
  std::mt19937 rng(6);
  const Tensor h = random_f32({2, 2, 2, 32}, rng), x = random_f32({2, 2, 2, 8}, rng);
  EXPECT_THROW(ops::dcae_upsample(h, x, 3, false), UserError);                               // factor_t 3
  EXPECT_THROW(ops::dcae_upsample(h, x, 1, true), UserError);                                // first frame without time
  EXPECT_THROW(ops::dcae_upsample(h, random_f32({1, 2, 2, 8}, rng), 2, false), UserError);   // frames differ
  EXPECT_THROW(ops::dcae_upsample(random_f32({2, 2, 2, 12}, rng), x, 2, false), UserError);  // 12 = 8 * 1.5
  EXPECT_THROW(ops::dcae_upsample(h, random_f32({2, 2, 2, 3}, rng), 2, false), UserError);   // 8 * 4 % 3
}

TEST(Hv15FrameOps, Transpose2dIsExact) {
  std::mt19937 rng(7);
  for (const Device d : frame_op_devices())
    for (const Shape& s : {Shape{1, 1}, Shape{33, 65}, Shape{70, 3}, Shape{128, 64}}) {
      SCOPED_TRACE(std::string(device_name(d)) + " " + std::to_string(s[0]) + "x" + std::to_string(s[1]));
      const Tensor x = random_f32(s, rng);
      const std::vector<double> xv = x.to_f64_vector();
      std::vector<double> ref(xv.size());
      for (i64 r = 0; r < s[0]; ++r)
        for (i64 c = 0; c < s[1]; ++c) ref[c * s[0] + r] = xv[r * s[1] + c];
      const FrameOpDevice dev(d);
      const Tensor y = ops::transpose2d(dev.put(x));
      EXPECT_EQ(y.shape(), (Shape{s[1], s[0]}));
      EXPECT_EQ(compare_f64(y, ref, 0.0), "");
    }
  EXPECT_THROW(ops::transpose2d(random_f32({2, 3, 4}, rng)), UserError);
}

TEST(Hv15FrameOps, UnclampedFrameWriteKeepsValues) {
  std::mt19937 rng(8);
  for (const Device d : frame_op_devices()) {
    SCOPED_TRACE(device_name(d));
    const Tensor chunk = random_f32({2, 3, 4, 3}, rng, 3.0f);  // many values outside [-1, 1]
    const FrameOpDevice dev(d);
    Tensor video = dev.put(Tensor::zeros({1, 3, 3, 3, 4}, DType::F32));
    ops::write_unpatchified_frames(dev.put(chunk), 1, video, 0, 1, /*clamp=*/false);
    const std::vector<double> cv = chunk.to_f64_vector();
    std::vector<double> ref(static_cast<std::size_t>(video.numel()), 0.0);
    for (i64 c = 0; c < 3; ++c)
      for (i64 f = 0; f < 2; ++f)
        for (i64 p = 0; p < 12; ++p) ref[(c * 3 + 1 + f) * 12 + p] = cv[(f * 12 + p) * 3 + c];
    EXPECT_EQ(compare_f64(video, ref, 0.0), "");
  }
}

}  // namespace
}  // namespace dattn
