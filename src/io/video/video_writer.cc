// write_video: the stream writer (video_stream_writer.cc) given every frame at once. Every file is written
// under a temporary name and renamed when complete (io/output_file.h): a failed write leaves no partial
// file, and an existing file of that name as it was.
#include "dattn/io/video_writer.h"

#include <cstdint>
#include <string>
#include <vector>

#include "io/video/frames.h"

namespace dattn {

std::vector<std::string> write_video(const std::string& path, const Tensor& frames, const VideoWriteOptions& options) {
  check_output_path(path, options);
  video_format_for(path);
  const video_detail::FrameGeometry g = video_detail::frame_geometry(frames, path);
  VideoStreamWriter writer(path, g.frames, g.height, g.width, options);
  writer.add(frames);
  return writer.finish();
}

}  // namespace dattn
