// Without FFmpeg (DATTN_VIDEO=off): the encoders and the reader are clear errors. check_output_path
// refuses .mp4 and .png before any work, so these are reached only by direct calls.
#ifndef DATTN_WITH_FFMPEG
#include "dattn/core/error.h"
#include "dattn/io/video_reader.h"
#include "io/video/encoders.h"

namespace dattn {
namespace {
[[noreturn]] void no_ffmpeg(const std::string& path) {
  throw UserError("'" + path + "': this dattn was built without FFmpeg (DATTN_VIDEO=off or no FFmpeg libraries)");
}
}  // namespace

namespace video_detail {
void write_png(const std::string& path, const std::uint8_t*, std::int64_t, std::int64_t) { no_ffmpeg(path); }
struct Mp4Stream::State {};
Mp4Stream::Mp4Stream(const std::string& path, const FrameGeometry&, const VideoWriteOptions&) { no_ffmpeg(path); }
Mp4Stream::~Mp4Stream() = default;
void Mp4Stream::add_frame(const std::uint8_t*) {}
void Mp4Stream::finish() {}
}  // namespace video_detail

DecodedVideo read_video_rgb(const std::string& path) { no_ffmpeg(path); }

}  // namespace dattn
#endif
