// Choosing the writer by extension and checking the output path before any work is done, so that a
// long generation never ends in "cannot write".
#include "io/video/output_path.h"

#include <cctype>
#include <filesystem>

#include "dattn/core/error.h"
#include "dattn/io/output_file.h"
#include "dattn/io/video_writer.h"
#ifdef DATTN_WITH_FFMPEG
#include "io/video/av_util.h"
#endif

namespace fs = std::filesystem;

namespace dattn {

VideoFormat video_format_for(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".mp4") return VideoFormat::MP4;
  if (ext == ".png") return VideoFormat::PNG;
  if (ext == ".safetensors") return VideoFormat::SAFETENSORS;
  throw UserError("output '" + path + "': unsupported extension '" + ext +
                  "': expected .mp4 (H.264 video), .png (image or numbered frames) or .safetensors (float frames)");
}

void check_output_path(const std::string& path, const VideoWriteOptions& options) {
  const VideoFormat format = video_format_for(path);
  check_output_file(path, "output");
#ifndef DATTN_WITH_FFMPEG
  if (format != VideoFormat::SAFETENSORS)
    throw UserError("output '" + path + "': this dattn was built without FFmpeg (DATTN_VIDEO=off or no FFmpeg "
                    "libraries), so it writes .safetensors frames only");
#else
  if (format == VideoFormat::MP4) {
    if (!avcodec_find_encoder_by_name(options.h264_encoder.c_str()))
      throw UserError("output '" + path + "': this FFmpeg (libavcodec " LIBAVCODEC_IDENT ") has no encoder '" +
                      options.h264_encoder + "' for H.264; write .png or .safetensors, or use an FFmpeg with it");
    if (!av_guess_format("mp4", nullptr, nullptr))
      throw UserError("output '" + path + "': this FFmpeg (libavformat) cannot write mp4 files");
    if (options.fps < 1) throw UserError("output '" + path + "': fps must be >= 1, got " + std::to_string(options.fps));
    if (options.crf < 0 || options.crf > 51)
      throw UserError("output '" + path + "': crf must be in [0, 51], got " + std::to_string(options.crf));
  }
#endif
}

void check_frame_paths(const std::string& path, std::int64_t frames) {
  if (video_format_for(path) != VideoFormat::PNG || frames < 2) return;
  for (std::int64_t i = 0; i < frames; ++i) {
    const std::string frame = video_detail::png_sequence_path(path, i);
    std::error_code ec;
    if (fs::is_directory(frame, ec))
      throw UserError("output '" + path + "': frame " + std::to_string(i) + "'s file '" + frame + "' is a folder");
    output_place(frame, "output '" + path + "': frame " + std::to_string(i) + "'s file", /*stream_ok=*/false);
  }
}

void check_frame_size(const std::string& path, std::int64_t height, std::int64_t width) {
  if (height < 1 || width < 1)
    throw UserError("output '" + path + "': frame size " + std::to_string(height) + "x" + std::to_string(width) +
                    " has no pixels");
  if (video_format_for(path) == VideoFormat::MP4 && (height % 2 || width % 2))
    throw UserError("output '" + path + "': H.264 with yuv420p needs an even height and width, got " +
                    std::to_string(height) + "x" + std::to_string(width) + "; write .png or .safetensors instead");
}

namespace video_detail {

std::string png_sequence_path(const std::string& path, std::int64_t index) {
  const fs::path p(path);
  char digits[32];
  std::snprintf(digits, sizeof digits, "_%04lld", static_cast<long long>(index));
  return (p.parent_path() / (p.stem().string() + digits + p.extension().string())).string();
}

}  // namespace video_detail
}  // namespace dattn
