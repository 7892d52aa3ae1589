// write_video: checks, then the writer the extension selects. Every file is written under a temporary
// name and renamed when complete (io/output_file.h): a failed write leaves no partial file, and an
// existing file of that name as it was.
#include "dattn/io/video_writer.h"

#include <cstdint>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/io/output_file.h"
#include "dattn/io/safetensors_writer.h"
#include "io/video/encoders.h"
#include "io/video/frames.h"
#include "io/video/output_path.h"

namespace dattn {
namespace {

using video_detail::FrameGeometry;

// Written straight from the frames' host memory when they are float32 there (no copy).
void write_float_frames(const std::string& path, const Tensor& frames, const FrameGeometry& g) {
  Tensor host = frames.device() == Device::CPU ? frames : frames.to(Device::CPU);
  if (host.dtype() != DType::F32) host = host.to(DType::F32);
  WrittenTensor t{"video", "F32", {g.frames, g.height, g.width, 3}, {}};
  t.data = host.data();
  t.size = static_cast<std::size_t>(host.numel()) * sizeof(float);
  write_safetensors(path, {t}, {{"format", "dattn video frames [F,H,W,3] RGB in [0,1]"}});  // replaces whole
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
  switch (format) {
    case VideoFormat::MP4: {
      PendingFile file(path);
      video_detail::write_mp4(file.temp(), rgb, g, options);
      file.commit();
      written.push_back(path);
      break;
    }
    case VideoFormat::PNG: {
      // Every frame is written before any is renamed, so a failure leaves an existing sequence as it was.
      std::vector<PendingFile> files;
      const std::size_t frame_bytes = static_cast<std::size_t>(g.height * g.width * 3);
      for (std::int64_t f = 0; f < g.frames; ++f) {
        files.emplace_back(g.frames == 1 ? path : video_detail::png_sequence_path(path, f));
        video_detail::write_png(files.back().temp(), rgb.data() + f * frame_bytes, g.height, g.width);
      }
      for (PendingFile& file : files) {
        file.commit();
        written.push_back(file.path());
      }
      break;
    }
    case VideoFormat::SAFETENSORS:
      write_float_frames(path, frames, g);
      written.push_back(path);
      break;
  }
  return written;
}

}  // namespace dattn
