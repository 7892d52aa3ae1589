// The --default-* values, checked when the server starts: a bad one was taken, and then every request that
// left the field out was refused with a 400 naming a field the client never sent.
#include <cstdint>
#include <string>

#include "dattn/core/error.h"
#include "dattn/io/video_writer.h"
#include "dattn/serve/request_parse.h"
#include "dattn/serve/video_files.h"

namespace dattn::serve {
namespace {

void within(const char* flag, std::int64_t value, std::int64_t max, const char* max_flag) {
  if (value < 1) throw UserError(std::string(flag) + " " + std::to_string(value) + ": expected a whole number from 1");
  if (value > max)
    throw UserError(std::string(flag) + " " + std::to_string(value) + " is above " + max_flag + " " +
                    std::to_string(max) + ": every request leaving the field out would be refused");
}

}  // namespace

void check_defaults(const ServeLimits& limits, const RequestDefaults& d) {
  within("--default-width", d.width, limits.max_width, "--max-width");
  within("--default-height", d.height, limits.max_height, "--max-height");
  within("--default-num-frames", d.num_frames, limits.max_frames, "--max-frames");
  within("--default-steps", d.num_inference_steps, limits.max_steps, "--max-steps");
  if (d.fps < 1 || d.fps > 240) throw UserError("--default-fps " + std::to_string(d.fps) + ": expected 1 to 240");
}

void check_defaults(const Pipeline& pipeline, const RequestDefaults& d, VideoFormat format) {
  GenerationRequest r;
  r.prompt = "the defaults";
  r.width = d.width;
  r.height = d.height;
  r.num_frames = d.num_frames;
  r.num_inference_steps = d.num_inference_steps;
  // The model's messages name generate's flags ("--num-frames 6 must be 4k+1 ..."), each a default's field.
  const struct {
    const char* field;
    const char* flag;
  } flags[] = {{"--width ", "--default-width"}, {"--height ", "--default-height"},
               {"--num-frames ", "--default-num-frames"}, {"--num-inference-steps ", "--default-steps"}};
  try {
    pipeline.check(r);
  } catch (const UserError& e) {
    const std::string message = e.what();
    for (const auto& f : flags)
      if (message.rfind(f.field, 0) == 0)
        throw UserError(std::string(f.flag) + " does not suit this model (a request leaving the field out gets it): " +
                        message);
    // Anything else (the memory a request needs, which the machine's free memory decides at the time) is
    // for each request to meet.
  }
  try {
    check_frame_size(std::string("video") + video_extension(format), d.height, d.width);
  } catch (const UserError& e) {
    throw UserError("--default-width " + std::to_string(d.width) + " and --default-height " + std::to_string(d.height) +
                    " do not suit --video-format " + video_format_name(format) + ": " + e.what());
  }
}

}  // namespace dattn::serve
