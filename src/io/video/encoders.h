#pragma once
// The FFmpeg-based encoders behind write_video. Pixels are 8-bit RGB, [frames, height, width, 3].
#include <cstdint>
#include <string>
#include <vector>

#include "dattn/io/video_writer.h"
#include "io/video/frames.h"

namespace dattn::video_detail {

// One PNG file (FFmpeg's png encoder, RGB24, lossless).
void write_png(const std::string& path, const std::uint8_t* rgb, std::int64_t height, std::int64_t width);

// An mp4 file with one H.264 yuv420p stream at options.fps.
void write_mp4(const std::string& path, const std::vector<std::uint8_t>& rgb, const FrameGeometry& geometry,
               const VideoWriteOptions& options);

}  // namespace dattn::video_detail
