// write_video: checks, then the writer the extension selects. A failed write removes the files it had
// started, so that a partial file is never mistaken for a result.
#include "dattn/io/video_writer.h"

#include <cstring>
#include <filesystem>

#include "dattn/core/error.h"
#include "dattn/io/safetensors_writer.h"
#include "io/video/encoders.h"
#include "io/video/frames.h"
#include "io/video/output_path.h"

namespace dattn {
namespace {

using video_detail::FrameGeometry;

// Appends each file to `written` before writing it.
void write_pngs(const std::string& path, const std::vector<std::uint8_t>& rgb, const FrameGeometry& g,
                std::vector<std::string>& written) {
  const std::size_t frame_bytes = static_cast<std::size_t>(g.height * g.width * 3);
  for (std::int64_t f = 0; f < g.frames; ++f) {
    written.push_back(g.frames == 1 ? path : video_detail::png_sequence_path(path, f));
    video_detail::write_png(written.back(), rgb.data() + f * frame_bytes, g.height, g.width);
  }
}

void write_float_frames(const std::string& path, const Tensor& frames, const FrameGeometry& g) {
  const std::vector<float> values = frames.to_f32_vector();
  WrittenTensor t{"video", "F32", {g.frames, g.height, g.width, 3}, {}};
  t.bytes.resize(values.size() * sizeof(float));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  write_safetensors(path, {t}, {{"format", "dattn video frames [F,H,W,3] RGB in [0,1]"}});
}

}  // namespace

std::vector<std::string> write_video(const std::string& path, const Tensor& frames, const VideoWriteOptions& options) {
  check_output_path(path, options);
  const VideoFormat format = video_format_for(path);
  const FrameGeometry g = video_detail::frame_geometry(frames, path);
  check_frame_size(path, g.height, g.width);
  video_detail::require_finite(frames, path);  // nothing non-finite reaches a user's file, in any format
  std::vector<std::uint8_t> rgb;
  if (format != VideoFormat::SAFETENSORS) rgb = video_detail::quantize_frames(frames, path);  // NaN check first
  std::vector<std::string> written;
  try {
    switch (format) {
      case VideoFormat::MP4:
        written.push_back(path);
        video_detail::write_mp4(path, rgb, g, options);
        break;
      case VideoFormat::PNG:
        write_pngs(path, rgb, g, written);
        break;
      case VideoFormat::SAFETENSORS:
        written.push_back(path);
        write_float_frames(path, frames, g);
        break;
    }
  } catch (...) {
    std::error_code ec;
    for (const std::string& file : written) std::filesystem::remove(file, ec);
    throw;
  }
  return written;
}

}  // namespace dattn
