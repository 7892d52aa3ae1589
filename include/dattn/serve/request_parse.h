#pragma once
// A video or image request's fields turned into a GenerationRequest, refused (400, naming the field)
// before it is queued: the server's limits first, then the model's own checks (Pipeline::check, the
// checks and messages of `dattn generate`) and the frame-size rule of the format written (H.264's even
// sizes for mp4 videos).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "dattn/io/video_writer.h"
#include "dattn/pipeline/pipeline.h"
#include "dattn/serve/request_fields.h"

namespace dattn::serve {

// What one request may ask for, so a request cannot exhaust the machine.
struct ServeLimits {
  std::int64_t max_width = 1920, max_height = 1920, max_frames = 241;
  int max_steps = 200;
  std::size_t max_body_bytes = 1 << 20;
  std::size_t max_prompt_chars = 16384;
  int max_images = 4;  // n of one image request
};

// What a request that leaves a field out gets.
struct RequestDefaults {
  std::int64_t width = 832, height = 480, num_frames = 81;
  int num_inference_steps = 50;
  int fps = 16;
  // No guidance_scale: a request without one gets the model's (Pipeline::default_guidance_scale).
};

struct VideoRequest {
  GenerationRequest generation;
  int fps = 16;
  nlohmann::json to_json() const;  // what the job store keeps and the video object shows
};

struct ImageRequest {
  GenerationRequest generation;  // one frame
  int n = 1;
};

// The defaults, checked when the server starts (UserError naming the --default-* flag): against the limits,
// before the port is bound, and against the model's checks (and `format`'s frame sizes) once it is loaded.
// A request leaving a field out must never be refused for it.
void check_defaults(const ServeLimits& limits, const RequestDefaults& defaults);
void check_defaults(const Pipeline& pipeline, const RequestDefaults& defaults, VideoFormat format);

// `format`: what the video is written as (the server's --video-format).
VideoRequest parse_video_request(const RequestFields& fields, const ServeLimits& limits,
                                 const RequestDefaults& defaults, const Pipeline& pipeline, const std::string& model,
                                 VideoFormat format = VideoFormat::MP4);
ImageRequest parse_image_request(const RequestFields& fields, const ServeLimits& limits,
                                 const RequestDefaults& defaults, const Pipeline& pipeline, const std::string& model);

}  // namespace dattn::serve
