#pragma once
// The files of a server's videos (--video-format): DIR/videos/ID.mp4 (H.264) or DIR/videos/ID.safetensors
// (the float frames `dattn generate --output x.safetensors` writes, for builds without FFmpeg). A server
// writes one format; a job a server of the other format ran keeps its file, served as it is.
#include <optional>
#include <string>

#include "dattn/io/video_writer.h"

namespace dattn::serve {

// "mp4" or "safetensors" (the option's spelling); nullopt for anything else, png included.
std::optional<VideoFormat> parse_video_format(const std::string& name);
const char* video_format_name(VideoFormat format);     // "mp4", "safetensors"
const char* video_extension(VideoFormat format);       // ".mp4", ".safetensors"
const char* video_content_type(VideoFormat format);    // "video/mp4", "application/octet-stream"
// The format of a video file's extension among the two a server writes; nullopt for any other.
std::optional<VideoFormat> video_format_of_file(const std::string& path);

// DIR/videos/ID.EXT (ID checked by valid_job_id).
std::string video_path(const std::string& output_dir, const std::string& id, VideoFormat format);
// The file a completed job `id` has, in either format (`preferred` first); nullopt when there is none.
std::optional<std::string> find_video(const std::string& output_dir, const std::string& id, VideoFormat preferred);
// Removes the job's file in either format (none is not an error).
void remove_videos(const std::string& output_dir, const std::string& id);

}  // namespace dattn::serve
