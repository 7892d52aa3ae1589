#pragma once
// The FFmpeg-based encoders behind write_video. Pixels are 8-bit RGB, [frames, height, width, 3].
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dattn/io/video_writer.h"
#include "io/video/frames.h"

namespace dattn::video_detail {

// One PNG file (FFmpeg's png encoder, RGB24, lossless).
void write_png(const std::string& path, const std::uint8_t* rgb, std::int64_t height, std::int64_t width);

// An mp4 file with one H.264 yuv420p stream at options.fps, written frame by frame: the constructor
// opens the encoder and writes the header, add_frame encodes one RGB frame (height x width x 3 bytes),
// finish() flushes the encoder and writes the trailer. Destroyed without finish(), the file is left
// incomplete: callers write it at a PendingFile's temporary name.
class Mp4Stream {
 public:
  Mp4Stream(const std::string& path, const FrameGeometry& geometry, const VideoWriteOptions& options);
  ~Mp4Stream();
  Mp4Stream(const Mp4Stream&) = delete;
  Mp4Stream& operator=(const Mp4Stream&) = delete;
  void add_frame(const std::uint8_t* rgb);
  void finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dattn::video_detail
