#pragma once
// Decoding a video or image file (anything the FFmpeg libraries open: mp4, png, ...) to RGB24 frames,
// for checking what the writers produce and for comparing outputs.
#include <cstdint>
#include <string>
#include <vector>

namespace dattn {

struct DecodedVideo {
  std::int64_t frames = 0, height = 0, width = 0;
  double fps = 0;                  // the stream's average frame rate, 0 when unknown
  std::string codec;               // FFmpeg decoder name, e.g. "h264", "png"
  std::vector<std::uint8_t> rgb;   // [frames, height, width, 3]
};

// Throws UserError when the file cannot be opened or has no video stream, std::runtime_error when
// decoding fails. YUV is converted with the colour matrix and range the stream declares.
DecodedVideo read_video_rgb(const std::string& path);

}  // namespace dattn
