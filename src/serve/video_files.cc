#include "dattn/serve/video_files.h"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "dattn/serve/job.h"

namespace dattn::serve {
namespace fs = std::filesystem;
namespace {

constexpr VideoFormat kServed[] = {VideoFormat::MP4, VideoFormat::SAFETENSORS};

}  // namespace

std::optional<VideoFormat> parse_video_format(const std::string& name) {
  for (const VideoFormat f : kServed)
    if (name == video_format_name(f)) return f;
  return std::nullopt;
}

const char* video_format_name(VideoFormat format) {
  switch (format) {
    case VideoFormat::MP4: return "mp4";
    case VideoFormat::SAFETENSORS: return "safetensors";
    case VideoFormat::PNG: break;
  }
  throw std::logic_error("video_format_name: a server writes no png videos");
}

const char* video_extension(VideoFormat format) {
  return format == VideoFormat::MP4 ? ".mp4" : format == VideoFormat::SAFETENSORS ? ".safetensors" : ".png";
}

const char* video_content_type(VideoFormat format) {
  return format == VideoFormat::MP4 ? "video/mp4" : "application/octet-stream";
}

std::optional<VideoFormat> video_format_of_file(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  for (const VideoFormat f : kServed)
    if (ext == video_extension(f)) return f;
  return std::nullopt;
}

std::string video_path(const std::string& output_dir, const std::string& id, VideoFormat format) {
  if (!valid_job_id(id)) throw std::logic_error("video_path: not a job id");
  return (fs::path(output_dir) / "videos" / (id + video_extension(format))).string();
}

std::optional<std::string> find_video(const std::string& output_dir, const std::string& id, VideoFormat preferred) {
  std::error_code ignored;
  std::string path = video_path(output_dir, id, preferred);
  if (fs::is_regular_file(path, ignored)) return path;
  for (const VideoFormat f : kServed) {
    if (f == preferred) continue;
    path = video_path(output_dir, id, f);
    if (fs::is_regular_file(path, ignored)) return path;
  }
  return std::nullopt;
}

void remove_videos(const std::string& output_dir, const std::string& id) {
  std::error_code ignored;
  for (const VideoFormat f : kServed) fs::remove(video_path(output_dir, id, f), ignored);
}

}  // namespace dattn::serve
