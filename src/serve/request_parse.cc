#include "dattn/serve/request_parse.h"

#include <cmath>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/io/video_writer.h"
#include "dattn/serve/api_error.h"

namespace dattn::serve {
namespace {

constexpr std::int64_t kMaxInt = 1 << 30;  // beyond any limit; the limits below name the real bound

// "WxH" as OpenAI writes sizes ("1280x720": width first).
void read_size(const RequestFields& f, GenerationRequest& r) {
  const auto size = f.text("size");
  if (!size) return;
  const auto x = size->find('x');
  const auto refuse = [&] {
    return bad_field("size", "'size' must be WIDTHxHEIGHT, two whole numbers from 1, e.g. \"832x480\"; got \"" +
                                 *size + "\"");
  };
  if (x == std::string::npos) throw refuse();
  const auto part = [&](const std::string& s) {
    const std::vector<std::pair<std::string, std::string>> one = {{"size", s}};
    try {
      return *RequestFields::from_form(one).integer("size", 1, kMaxInt);
    } catch (const ApiError&) {
      throw refuse();
    }
  };
  r.width = part(size->substr(0, x));
  r.height = part(size->substr(x + 1));
}

void check_limit(const char* field, std::int64_t value, std::int64_t max, const char* flag) {
  if (value > max)
    throw bad_field(field, std::string("'") + field + "' " + std::to_string(value) + " is above this server's limit of " +
                               std::to_string(max) + " (" + flag + ")");
}

// The fields video and image requests share.
GenerationRequest read_common(const RequestFields& f, const ServeLimits& limits, const RequestDefaults& d,
                              const std::string& model) {
  if (const auto m = f.text("model"); m && *m != model)
    throw ApiError(404, "model '" + *m + "' is not served here; this server runs '" + model + "'",
                   "invalid_request_error", "model", "model_not_found");
  GenerationRequest r;
  const auto prompt = f.text("prompt");
  if (!prompt) throw bad_field("prompt", "'prompt' is required");
  if (prompt->size() > limits.max_prompt_chars)
    throw bad_field("prompt", "'prompt' is " + std::to_string(prompt->size()) + " bytes, above this server's limit of " +
                                  std::to_string(limits.max_prompt_chars) + " (--max-prompt-chars)");
  r.prompt = *prompt;
  r.negative_prompt = f.text("negative_prompt").value_or("");
  if (r.negative_prompt.size() > limits.max_prompt_chars)
    throw bad_field("negative_prompt", "'negative_prompt' is above this server's limit of " +
                                           std::to_string(limits.max_prompt_chars) + " bytes (--max-prompt-chars)");
  r.width = d.width;
  r.height = d.height;
  read_size(f, r);
  // 'width' and 'height' may repeat 'size' but not contradict it: neither silently wins.
  const auto side = [&](const char* field, std::int64_t& value) {
    const auto given = f.integer(field, 1, kMaxInt);
    if (!given) return;
    if (f.has("size") && *given != value)
      throw bad_field(field, std::string("'") + field + "' " + std::to_string(*given) + " disagrees with 'size' \"" +
                                 *f.text("size") + "\"; give one of them, or both alike");
    value = *given;
  };
  side("width", r.width);
  side("height", r.height);
  check_limit("width", r.width, limits.max_width, "--max-width");
  check_limit("height", r.height, limits.max_height, "--max-height");
  r.num_inference_steps = static_cast<int>(f.integer("num_inference_steps", 1, kMaxInt).value_or(d.num_inference_steps));
  check_limit("num_inference_steps", r.num_inference_steps, limits.max_steps, "--max-steps");
  r.guidance_scale = f.number("guidance_scale");  // absent: the model's default
  r.flow_shift = f.number("flow_shift");
  r.seed = f.whole("seed").value_or(0);
  return r;
}

// The model's checks, as `dattn generate` runs them; their messages name the command-line flag
// ("--num-frames 6 must be ..."), which maps onto the field of the same name. `written_as`: a file name
// of the output's format, whose frame-size rule applies (H.264's even sizes for mp4).
void check_with_model(const Pipeline& pipeline, const GenerationRequest& r, const std::string& written_as) {
  try {
    pipeline.check(r);
    check_frame_size(written_as, r.height, r.width);
  } catch (const UserError& e) {
    const std::string message = e.what();
    std::string param;
    if (message.rfind("--", 0) == 0) {
      param = message.substr(2, message.find(' ') - 2);
      for (char& c : param) c = c == '-' ? '_' : c;
    }
    throw ApiError(400, message, "invalid_request_error", param.empty() ? std::nullopt : std::optional(param),
                   "invalid_value");
  }
}

}  // namespace

nlohmann::json VideoRequest::to_json() const {
  const GenerationRequest& r = generation;
  nlohmann::json j = {{"prompt", r.prompt}, {"negative_prompt", r.negative_prompt}, {"width", r.width},
                      {"height", r.height}, {"num_frames", r.num_frames}, {"fps", fps},
                      {"num_inference_steps", r.num_inference_steps}, {"seed", r.seed}};
  const auto nullable = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  j["guidance_scale"] = nullable(r.guidance_scale);  // null: the model's default (the report says which)
  j["flow_shift"] = nullable(r.flow_shift);
  return j;
}

VideoRequest parse_video_request(const RequestFields& f, const ServeLimits& limits, const RequestDefaults& d,
                                 const Pipeline& pipeline, const std::string& model, VideoFormat format) {
  f.allow_only({"prompt", "model", "size", "width", "height", "num_frames", "seconds", "fps", "num_inference_steps",
                "guidance_scale", "flow_shift", "seed", "negative_prompt"});
  VideoRequest v;
  v.generation = read_common(f, limits, d, model);
  v.fps = static_cast<int>(f.integer("fps", 1, 240).value_or(d.fps));
  GenerationRequest& r = v.generation;
  if (f.has("num_frames") && f.has("seconds"))
    throw bad_field("seconds", "give 'num_frames' or 'seconds', not both");
  r.num_frames = d.num_frames;
  if (const auto n = f.integer("num_frames", 1, kMaxInt)) r.num_frames = *n;
  // OpenAI's seconds is text ("4"); the video then holds seconds * fps frames after the first one.
  if (const auto seconds = f.number("seconds", true)) {
    if (*seconds <= 0 || *seconds > 3600) throw bad_field("seconds", "'seconds' must be above 0 and at most 3600");
    r.num_frames = static_cast<std::int64_t>(std::llround(*seconds * v.fps)) + 1;
  }
  check_limit("num_frames", r.num_frames, limits.max_frames, "--max-frames");
  check_with_model(pipeline, r, std::string("video") + (format == VideoFormat::MP4 ? ".mp4" : ".safetensors"));
  return v;
}

ImageRequest parse_image_request(const RequestFields& f, const ServeLimits& limits, const RequestDefaults& d,
                                 const Pipeline& pipeline, const std::string& model) {
  f.allow_only({"prompt", "model", "n", "size", "response_format", "seed", "num_inference_steps", "guidance_scale",
                "flow_shift", "negative_prompt", "user"});
  if (const auto format = f.text("response_format"); format && *format != "b64_json")
    throw bad_field("response_format", "'response_format' must be \"b64_json\" (this server keeps no image URLs)");
  f.text("user");  // OpenAI's end-user tag: accepted, unused, but a string
  ImageRequest image;
  image.generation = read_common(f, limits, d, model);
  image.generation.num_frames = 1;
  image.n = static_cast<int>(f.integer("n", 1, limits.max_images).value_or(1));
  check_with_model(pipeline, image.generation, "image.png");
  return image;
}

}  // namespace dattn::serve
