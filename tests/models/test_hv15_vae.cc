// The HunyuanVideo-1.5 VAE decoder against diffusers (golden hv15_tiny vae_decode: AutoencoderKLHunyuanVideo15
// decoded in float64 as one whole video), on the CPU in float32: the output and every intermediate, the
// score-blocked attention, and the decode's memory model at 480p x 121 frames.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "dattn/io/safetensors.h"
#include "dattn/models/hunyuanvideo15_vae.h"
#include "models/hv15_vae_test_util.h"
#include "models/vae_test_inputs.h"

namespace dattn {
namespace {

using testing::error_of;
using testing::hv15_vae_case;
using testing::hv15_vae_dir;

Tensor golden_z(const SafetensorsFile& golden) {
  return Tensor::from_f64(golden.read_f64("input.z"), golden.info("input.z").shape, DType::F32);
}

TEST(Hv15Vae, DecodeMatchesDiffusers) {
  const SafetensorsFile golden(hv15_vae_case());
  const Tensor z = golden_z(golden);
  const HunyuanVideo15Vae vae = HunyuanVideo15Vae::load(hv15_vae_dir());
  ASSERT_EQ(vae.config().video_shape(z.shape()), golden.info("output.video").shape);
  const Tensor video = vae.decode(z);
  ASSERT_EQ(video.shape(), golden.info("output.video").shape);
  const testing::Error e = error_of(video.to_f64_vector(), golden.read_f64("output.video"));
  std::printf("[hv15_vae] output.video on CPU fp32: rel L2 %.3g, max abs %.3g (max |ref| %.3g)\n", e.rel_l2, e.max_abs,
              e.max_ref);
  ASSERT_EQ(e.nonfinite, 0u);
  // diffusers' own float32 decode is 8.4e-7 from its float64 one (vae_decode.json).
  EXPECT_LE(e.rel_l2, 2e-6);
  EXPECT_GT(e.max_ref, 1.0) << "the reference leaves [-1, 1]: the decoder does not clamp, and neither may dattn";
}

TEST(Hv15Vae, WarmUpChangesNoLaterDecode) {
  const SafetensorsFile golden(hv15_vae_case());
  const Tensor z = golden_z(golden);
  const HunyuanVideo15Vae vae = HunyuanVideo15Vae::load(hv15_vae_dir());
  const std::vector<double> before = vae.decode(z).to_f64_vector();
  vae.warm_up();
  EXPECT_EQ(vae.decode(z).to_f64_vector(), before);
}

TEST(Hv15Vae, EveryIntermediateMatchesDiffusers) {
  const SafetensorsFile golden(hv15_vae_case());
  std::vector<double> video;
  const auto rec =
      testing::decode_recording(hv15_vae_dir(), golden_z(golden), Device::CPU, ops::ConvMath::FP32, &video);
  // In forward order, so that the first one off names the layer that disagrees.
  for (const char* name : {"decoder.mid_block.in", "decoder.mid_block.attentions.0.in",
                           "decoder.mid_block.attentions.0.out", "decoder.mid_block.out", "decoder.up_blocks.0.out"}) {
    ASSERT_TRUE(rec.count(name)) << name << " was never reported";
    const testing::Recorded& r = rec.at(name);
    const Shape& ref_shape = golden.info(name).shape;
    ASSERT_EQ((Shape{1, r.frame[2], r.frames, r.frame[0], r.frame[1]}), ref_shape) << name;
    const testing::Error e = error_of(r.ncthw(), golden.read_f64(name));
    std::printf("[hv15_vae] %-36s rel L2 %.3g, max abs %.3g\n", name, e.rel_l2, e.max_abs);
    ASSERT_EQ(e.nonfinite, 0u) << name;
    EXPECT_LE(e.rel_l2, 1e-6) << name;
  }
  const Shape vs = golden.info("output.video").shape;
  const testing::Error e =
      error_of(testing::to_ncthw(video, vs[1], vs[2], vs[3] * vs[4]), golden.read_f64("output.video"));
  EXPECT_LE(e.rel_l2, 2e-6) << "the internal decoder's frames";
}

// Queries in blocks of one row (score_bytes below one row) against the default single block per frame.
TEST(Hv15Vae, ScoreBlockedAttentionGivesTheSameVideo) {
  const SafetensorsFile golden(hv15_vae_case());
  const Tensor z = golden_z(golden);
  HunyuanVideo15Vae vae = HunyuanVideo15Vae::load(hv15_vae_dir());
  const std::vector<double> whole = vae.decode(z).to_f64_vector();
  vae.set_attention_score_bytes(1);
  const testing::Error e = error_of(vae.decode(z).to_f64_vector(), whole);
  EXPECT_LE(e.rel_l2, 1e-6);
  const testing::Error g = error_of(vae.decode(z).to_f64_vector(), golden.read_f64("output.video"));
  EXPECT_LE(g.rel_l2, 2e-6);
}

// Decoding the first n latent frames gives the first 1 + 4 (n - 1) frames of the whole decode: the
// convolutions' caches and the attention's key/value cache carry everything a later frame needs, and
// nothing of a later frame reaches an earlier one.
TEST(Hv15Vae, DecodeIsCausal) {
  const HunyuanVideo15Vae vae = HunyuanVideo15Vae::load(hv15_vae_dir());
  const Tensor z = testing::random_latents({1, 8, 4, 2, 3}, 5);
  const std::vector<double> full = vae.decode(z).to_f64_vector();
  const std::vector<float> zv = z.to_f32_vector();
  const std::int64_t plane = 32 * 48;  // one video frame of one channel
  for (std::int64_t n = 1; n < 4; ++n) {
    std::vector<float> part;
    for (std::int64_t c = 0; c < 8; ++c) part.insert(part.end(), zv.begin() + c * 4 * 6, zv.begin() + (c * 4 + n) * 6);
    const std::vector<double> got = vae.decode(Tensor::from_f32(part, {1, 8, n, 2, 3})).to_f64_vector();
    const std::int64_t frames = 1 + 4 * (n - 1);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(3 * frames * plane));
    std::vector<double> ref;
    for (std::int64_t c = 0; c < 3; ++c)
      ref.insert(ref.end(), full.begin() + c * 13 * plane, full.begin() + (c * 13 + frames) * plane);
    EXPECT_LE(error_of(got, ref).max_abs, 1e-6) << n << " latent frames";
  }
}

// The memory model at the size the brief bounds: 480p x 121 frames of the released VAE. Only the video
// and the attention cache grow with the frame count; the caches and the working set depend on the frame
// size alone.
TEST(Hv15Vae, DecodeMemoryIsBoundedAt480p121Frames) {
  const HunyuanVideo15VaeConfig c;  // diffusers' defaults are the released checkpoint's
  const Shape z = {1, 32, 31, 30, 52};
  EXPECT_EQ(c.video_shape(z), (Shape{1, 3, 121, 480, 832}));
  const HunyuanVideo15VaeMemory m = hunyuanvideo15_vae_decode_memory(c, z);
  const double gib = 1024.0 * 1024 * 1024;
  std::printf(
      "[hv15_vae] decode memory at 480x832x121: weights %.2f, video %.2f, frame caches %.2f, attention %.2f, "
      "working %.2f, total %.2f GiB\n",
      m.weights / gib, m.video / gib, m.frame_caches / gib, m.attention_cache / gib, m.working / gib, m.total() / gib);
  EXPECT_EQ(m.video, std::int64_t{3} * 121 * 480 * 832 * 4);
  EXPECT_LT(m.total(), std::int64_t{12} << 30);
  const HunyuanVideo15VaeMemory twice = hunyuanvideo15_vae_decode_memory(c, {1, 32, 61, 30, 52});
  EXPECT_EQ(twice.frame_caches, m.frame_caches);
  EXPECT_EQ(twice.weights, m.weights);
  EXPECT_LT(twice.working, m.working * 2);
}

}  // namespace
}  // namespace dattn
