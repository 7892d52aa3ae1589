// Video and image writers: each format is written to a fresh folder and read back (safetensors and png
// exactly, mp4 decoded with libavformat/libavcodec and compared with a tolerance, H.264 being lossy),
// and every up-front check fails with a message naming the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "dattn/core/error.h"
#include "dattn/io/safetensors.h"
#include "dattn/io/video_reader.h"
#include "dattn/io/video_writer.h"
#include "support/feature_skip.h"

namespace fs = std::filesystem;
using namespace dattn;

namespace {

class VideoWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("dattn_video_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// A smooth moving colour pattern in [0,1], with a border of out-of-range values to exercise clamping.
std::vector<double> pattern(std::int64_t frames, std::int64_t h, std::int64_t w, bool out_of_range) {
  std::vector<double> v;
  for (std::int64_t f = 0; f < frames; ++f)
    for (std::int64_t y = 0; y < h; ++y)
      for (std::int64_t x = 0; x < w; ++x) {
        const double u = double(x) / double(w - 1), t = double(y) / double(h - 1);
        v.push_back(0.5 + 0.45 * std::sin(3.0 * u + 0.3 * double(f)));
        v.push_back(0.2 + 0.6 * t);
        v.push_back(0.5 + 0.4 * std::cos(2.0 * (u + t) - 0.2 * double(f)));
        if (out_of_range && x == 0) v[v.size() - 3] = -0.25, v[v.size() - 1] = 1.5;
      }
  return v;
}

// What diffusers' numpy computes: clamp, * 255, round half to even, in float32.
std::vector<std::uint8_t> quantized(const std::vector<double>& v) {
  std::vector<std::uint8_t> out;
  for (double d : v) out.push_back(static_cast<std::uint8_t>(std::nearbyint(std::clamp(float(d), 0.0f, 1.0f) * 255.0f)));
  return out;
}

void expect_user_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected a UserError containing '" << needle << "'";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST_F(VideoWriterTest, FormatFollowsTheExtension) {
  EXPECT_EQ(video_format_for("a/b.mp4"), VideoFormat::MP4);
  EXPECT_EQ(video_format_for("b.MP4"), VideoFormat::MP4);
  EXPECT_EQ(video_format_for("b.png"), VideoFormat::PNG);
  EXPECT_EQ(video_format_for("b.safetensors"), VideoFormat::SAFETENSORS);
  expect_user_error([] { video_format_for("out.avi"); }, "unsupported extension '.avi'");
  expect_user_error([] { video_format_for("out"); }, "unsupported extension ''");
}

TEST_F(VideoWriterTest, SafetensorsKeepsTheValuesExactly) {
  const std::vector<double> v = pattern(3, 8, 10, true);
  const Tensor frames = Tensor::from_f64(v, {3, 8, 10, 3}, DType::F32);
  EXPECT_EQ(write_video(path("v.safetensors"), frames), std::vector<std::string>{path("v.safetensors")});
  SafetensorsFile f(path("v.safetensors"));
  EXPECT_EQ(f.info("video").dtype, "F32");
  EXPECT_EQ(f.info("video").shape, (std::vector<std::int64_t>{3, 8, 10, 3}));
  const std::vector<float> want = frames.to_f32_vector();
  EXPECT_EQ(f.read_f64("video"), std::vector<double>(want.begin(), want.end()));
}

TEST_F(VideoWriterTest, SinglePngReadsBackExactly) {
  DATTN_SKIP_WITHOUT_FFMPEG();
  const std::vector<double> v = pattern(1, 16, 24, true);
  // [1,F,H,W,3] as the pipeline returns it is accepted too.
  write_video(path("img.png"), Tensor::from_f64(v, {1, 1, 16, 24, 3}, DType::F32));
  const DecodedVideo d = read_video_rgb(path("img.png"));
  EXPECT_EQ(d.codec, "png");
  ASSERT_EQ(d.frames, 1);
  EXPECT_EQ(d.height, 16);
  EXPECT_EQ(d.width, 24);
  EXPECT_EQ(d.rgb, quantized(v));
}

TEST_F(VideoWriterTest, PngSequenceIsNumbered) {
  DATTN_SKIP_WITHOUT_FFMPEG();
  const std::vector<double> v = pattern(3, 8, 6, false);
  const std::vector<std::string> files = write_video(path("seq.png"), Tensor::from_f64(v, {3, 8, 6, 3}, DType::F64));
  ASSERT_EQ(files, (std::vector<std::string>{path("seq_0000.png"), path("seq_0001.png"), path("seq_0002.png")}));
  EXPECT_FALSE(fs::exists(path("seq.png")));
  const std::vector<std::uint8_t> want = quantized(v);
  for (std::size_t f = 0; f < files.size(); ++f) {
    const DecodedVideo d = read_video_rgb(files[f]);
    ASSERT_EQ(d.frames, 1) << files[f];
    const std::vector<std::uint8_t> frame(want.begin() + f * 8 * 6 * 3, want.begin() + (f + 1) * 8 * 6 * 3);
    EXPECT_EQ(d.rgb, frame) << files[f];
  }
}

// A 2-frame sequence written over a 5-frame one left seq_0002..0004 behind: two videos in one folder.
TEST_F(VideoWriterTest, AShorterPngSequenceRemovesTheLongerOnesTail) {
  DATTN_SKIP_WITHOUT_FFMPEG();
  write_video(path("seq.png"), Tensor::from_f64(pattern(5, 8, 6, false), {5, 8, 6, 3}, DType::F64));
  std::ofstream(path("seq_0006.png")) << "not this sequence's";  // past a gap: not touched
  std::ofstream(path("seq_00002.png")) << "another name";
  write_video(path("seq.png"), Tensor::from_f64(pattern(2, 8, 6, false), {2, 8, 6, 3}, DType::F64));
  for (const char* gone : {"seq_0002.png", "seq_0003.png", "seq_0004.png"}) EXPECT_FALSE(fs::exists(path(gone))) << gone;
  for (const char* kept : {"seq_0000.png", "seq_0001.png", "seq_0006.png", "seq_00002.png"})
    EXPECT_TRUE(fs::exists(path(kept))) << kept;
}

// A folder in the way of frame 1 was found after the run, with frame 0 already renamed into place.
TEST_F(VideoWriterTest, AFolderInThePlaceOfAFrameIsRefusedBeforeAnyFrame) {
  DATTN_SKIP_WITHOUT_FFMPEG();
  fs::create_directories(path("seq_0001.png"));
  try {
    write_video(path("seq.png"), Tensor::from_f64(pattern(3, 8, 6, false), {3, 8, 6, 3}, DType::F64));
    ADD_FAILURE() << "written over a folder";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("frame 1's file"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path("seq_0000.png")));
  EXPECT_NO_THROW(check_frame_paths(path("seq.png"), 1));  // one frame is seq.png itself
}

TEST_F(VideoWriterTest, Mp4DecodesCloseToTheInput) {
  DATTN_SKIP_WITHOUT_FFMPEG();
  const std::int64_t F = 9, H = 64, W = 96;
  const std::vector<double> v = pattern(F, H, W, false);
  VideoWriteOptions options;
  options.fps = 16;
  write_video(path("v.mp4"), Tensor::from_f64(v, {F, H, W, 3}, DType::F32), options);
  const DecodedVideo d = read_video_rgb(path("v.mp4"));
  EXPECT_EQ(d.codec, "h264");
  ASSERT_EQ(d.frames, F);
  ASSERT_EQ(d.height, H);
  ASSERT_EQ(d.width, W);
  EXPECT_DOUBLE_EQ(d.fps, 16.0);
  const std::vector<std::uint8_t> want = quantized(v);
  double sum = 0;
  int worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const int diff = std::abs(int(d.rgb[i]) - int(want[i]));
    sum += diff;
    worst = std::max(worst, diff);
  }
  const double mean = sum / double(want.size());
  std::cout << "[ mp4      ] crf " << options.crf << ": mean |error| " << mean << " levels, max " << worst << "\n";
  // Chroma is subsampled 2x2 and x264 at crf 18 is near-transparent: a smooth pattern stays close.
  EXPECT_LT(mean, 1.5);
  EXPECT_LE(worst, 20);
}

TEST_F(VideoWriterTest, UpFrontChecks) {
  expect_user_error([&] { check_output_path(path("missing/v.mp4")); }, "does not exist");
  expect_user_error([&] { check_output_path(dir_.string() + "/.png"); }, "unsupported extension ''");  // a dot file
  fs::create_directories(path("folder.png"));
  expect_user_error([&] { check_output_path(path("folder.png")); }, "is a folder");
  expect_user_error([&] { check_output_path(path("v.gif")); }, "unsupported extension '.gif'");
  expect_user_error([&] { check_frame_size(path("v.mp4"), 63, 96); }, "even height and width");
  EXPECT_NO_THROW(check_frame_size(path("v.png"), 63, 95));
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directories(path("ro"));
    fs::permissions(path("ro"), fs::perms::owner_read | fs::perms::owner_exec);
    expect_user_error([&] { check_output_path(path("ro/v.mp4")); }, "cannot write in folder");
    fs::permissions(path("ro"), fs::perms::owner_all);
  }
  EXPECT_TRUE(fs::is_empty(dir_ / "folder.png"));
}

TEST_F(VideoWriterTest, MissingH264EncoderIsRefusedUpFront) {
  DATTN_SKIP_WITHOUT_FFMPEG();
  VideoWriteOptions no_encoder;
  no_encoder.h264_encoder = "no_such_h264";
  expect_user_error([&] { check_output_path(path("v.mp4"), no_encoder); }, "no encoder 'no_such_h264'");
}

TEST_F(VideoWriterTest, WithoutFfmpegOnlySafetensorsIsWritten) {
#ifdef DATTN_WITH_FFMPEG
  GTEST_SKIP() << "built with FFmpeg: mp4 and png are written (the tests above)";
#endif
  expect_user_error([&] { check_output_path(path("v.mp4")); }, "built without FFmpeg");
  expect_user_error([&] { check_output_path(path("v.png")); }, "built without FFmpeg");
  EXPECT_NO_THROW(check_output_path(path("v.safetensors")));
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(VideoWriterTest, BadFramesFailWithoutLeavingFiles) {
  DATTN_SKIP_WITHOUT_FFMPEG();
  expect_user_error([&] { write_video(path("a.png"), Tensor::zeros({2, 4, 4, 4}, DType::F32)); }, "[F,H,W,3]");
  expect_user_error([&] { write_video(path("a.png"), Tensor::zeros({2, 4, 4, 3}, DType::BF16)); }, "fp32 or fp64");
  expect_user_error([&] { write_video(path("a.mp4"), Tensor::zeros({2, 5, 4, 3}, DType::F32)); }, "even height");
  std::vector<double> v = pattern(2, 4, 4, false);
  v[40] = NAN;
  EXPECT_THROW(write_video(path("n.mp4"), Tensor::from_f64(v, {2, 4, 4, 3}, DType::F32)), std::runtime_error);
  EXPECT_TRUE(fs::is_empty(dir_)) << "a failed write left files behind";
}

// Nothing non-finite reaches a user's file, in any format: the .safetensors output wrote NaN as it was,
// and clamping made an Inf a white pixel in .mp4 and .png. NumericError (status 3) names the first one.
TEST_F(VideoWriterTest, NonFiniteFramesAreNeverWritten) {
  std::vector<double> v = pattern(2, 4, 4, false);
  v[(1 * 4 * 4 + 2 * 4 + 3) * 3 + 1] = INFINITY;  // frame 1, row 2, column 3, channel 1
  v[90] = NAN;
  std::vector<std::string> names = {"f.safetensors"};
#ifdef DATTN_WITH_FFMPEG
  names.insert(names.end(), {"f.mp4", "f.png"});
#endif
  for (const std::string& name : names) {
    try {
      write_video(path(name), Tensor::from_f64(v, {2, 4, 4, 3}, DType::F32));
      ADD_FAILURE() << name << ": non-finite frames were written";
    } catch (const NumericError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("2 of 96 frame values are NaN or Inf"), std::string::npos) << m;
      EXPECT_NE(m.find("the first at frame 1, row 2, column 3, channel 1"), std::string::npos) << m;
      EXPECT_NE(m.find("nothing written"), std::string::npos) << m;
    }
    EXPECT_TRUE(fs::is_empty(dir_)) << name << ": a refused write left files behind";
  }
}

// The stream writer given the frames in pieces writes what write_video writes given them at once.
std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> write_in_pieces(const std::string& path, const Tensor& frames,
                                         const std::vector<std::int64_t>& pieces) {
  VideoStreamWriter writer(path, frames.dim(0), frames.dim(1), frames.dim(2));
  std::int64_t at = 0;
  for (std::int64_t n : pieces) {
    writer.add(frames.narrow0(at, n));
    at += n;
  }
  return writer.finish();
}

TEST_F(VideoWriterTest, StreamedPiecesWriteWhatOneCallWrites) {
  const Tensor frames = Tensor::from_f64(pattern(9, 16, 24, true), {9, 16, 24, 3}, DType::F32);
  std::vector<std::string> names = {".safetensors"};
#ifdef DATTN_WITH_FFMPEG
  names.insert(names.end(), {".png", ".mp4"});
#endif
  for (const std::string& ext : names) {
    const std::vector<std::string> whole = write_video(path("whole" + ext), frames);
    const std::vector<std::string> pieces = write_in_pieces(path("pieces" + ext), frames, {1, 4, 4});
    ASSERT_EQ(whole.size(), pieces.size()) << ext;
    for (std::size_t i = 0; i < whole.size(); ++i) {
      if (ext == ".mp4") {  // x264's bytes may differ between encoder instances; the pictures may not
        const DecodedVideo a = read_video_rgb(whole[i]), b = read_video_rgb(pieces[i]);
        EXPECT_EQ(a.frames, 9);
        EXPECT_EQ(a.rgb, b.rgb);
      } else {
        EXPECT_EQ(file_bytes(whole[i]), file_bytes(pieces[i])) << whole[i] << " vs " << pieces[i];
      }
    }
  }
}

// A NaN in a later piece: the earlier pieces were already encoded, yet nothing is written, an existing
// file stays as it was, and the error counts and places the bad values over the whole video.
TEST_F(VideoWriterTest, StreamedNonFiniteFrameLeavesNoFile) {
  std::vector<double> v = pattern(5, 4, 4, false);
  v[(3 * 4 * 4 + 1 * 4 + 2) * 3 + 0] = NAN;  // frame 3, row 1, column 2, channel 0
  v[(4 * 4 * 4) * 3 + 2] = -INFINITY;
  const Tensor frames = Tensor::from_f64(v, {5, 4, 4, 3}, DType::F32);
  std::vector<std::string> names = {"s.safetensors"};
#ifdef DATTN_WITH_FFMPEG
  names.insert(names.end(), {"s.mp4", "s.png"});
#endif
  for (const std::string& name : names) {
    const bool sequence = name == "s.png";
    if (!sequence) std::ofstream(path(name)) << "old";
    try {
      write_in_pieces(path(name), frames, {1, 2, 2});
      ADD_FAILURE() << name << ": non-finite frames were written";
    } catch (const NumericError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("2 of 240 frame values are NaN or Inf"), std::string::npos) << m;
      EXPECT_NE(m.find("the first at frame 3, row 1, column 2, channel 0"), std::string::npos) << m;
    }
    if (sequence) {
      EXPECT_TRUE(fs::is_empty(dir_)) << name << ": a refused write left files behind";
    } else {
      EXPECT_EQ(file_bytes(path(name)), (std::vector<char>{'o', 'l', 'd'})) << name;
      EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1) << name << ": temporaries left";
      fs::remove(path(name));
    }
  }
}

// A run that fails mid-way destroys its writer: no file, no temporary; a wrong count or size is a
// UserError naming the numbers.
TEST_F(VideoWriterTest, StreamWriterRefusesWhatDoesNotFit) {
  const Tensor frames = Tensor::from_f64(pattern(3, 4, 6, false), {3, 4, 6, 3}, DType::F32);
  {
    VideoStreamWriter writer(path("a.safetensors"), 3, 4, 6);
    writer.add(frames.narrow0(0, 2));
  }
  EXPECT_TRUE(fs::is_empty(dir_)) << "an abandoned writer left files behind";
  expect_user_error([&] {
    VideoStreamWriter writer(path("a.safetensors"), 3, 4, 6);
    writer.add(frames.narrow0(0, 2));
    writer.finish();
  }, "2 of the video's 3 frames were given");
  expect_user_error([&] {
    VideoStreamWriter writer(path("a.safetensors"), 2, 4, 6);
    writer.add(frames);
  }, "3 frames given to a video of 2");
  expect_user_error([&] {
    VideoStreamWriter writer(path("a.safetensors"), 3, 4, 8);
    writer.add(frames);
  }, "do not fit a 8x4 video");
  expect_user_error([&] { VideoStreamWriter(path("a.safetensors"), 0, 4, 6); }, "no pixels");
  expect_user_error([&] { VideoStreamWriter(path("a.avi"), 3, 4, 6); }, "unsupported extension");
  EXPECT_TRUE(fs::is_empty(dir_)) << "refused writers left files behind";
}

}  // namespace
