// Shared request checks (see request_checks.h). diffusers rounds a bad size or frame count down with a
// warning; dattn refuses it instead, so the video has the size that was asked for.
#include "pipeline/common/request_checks.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "dattn/core/error.h"
#include "dattn/ops/finite.h"
#include "text/utf8.h"

namespace dattn::pipeline {
namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

}  // namespace

void check_multiple(const char* flag, std::int64_t value, std::int64_t multiple, const std::string& why) {
  if (value < 1 || value % multiple != 0) {
    // The nearest values that work, positive and without overflow (a hint of "try 0" or of a negative
    // number for a huge one helped no one).
    const std::int64_t below = value < multiple ? 0 : value / multiple * multiple;
    const bool above_fits = below <= std::numeric_limits<std::int64_t>::max() - multiple;
    std::string hint;
    if (below >= multiple) hint = "; try " + std::to_string(below);
    if (above_fits) hint += (hint.empty() ? "; try " : " or ") + std::to_string(below + multiple);
    throw UserError(std::string(flag) + " " + std::to_string(value) + " must be a positive multiple of " +
                    std::to_string(multiple) + " (" + why + ")" + hint);
  }
}

void check_common_fields(const GenerationRequest& r, std::int64_t ft, int max_steps) {
  // Before any work: the text stage would refuse them only after loading the text encoder.
  text_detail::decode_utf8(r.prompt, "--prompt");
  text_detail::decode_utf8(r.negative_prompt, "--negative-prompt");
  if (r.num_frames < 1 || (r.num_frames - 1) % ft != 0) {
    const std::int64_t k = r.num_frames < 1 ? 0 : (r.num_frames - 1) / ft;
    std::string hint = "; try " + std::to_string(k * ft + 1);
    if (k * ft + 1 <= std::numeric_limits<std::int64_t>::max() - ft) hint += " or " + std::to_string((k + 1) * ft + 1);
    throw UserError("--num-frames " + std::to_string(r.num_frames) + " must be " + std::to_string(ft) +
                    "k+1 (the VAE's temporal factor is " + std::to_string(ft) + ")" + hint);
  }
  if (r.num_inference_steps < 1 || r.num_inference_steps > max_steps)
    throw UserError("--num-inference-steps " + std::to_string(r.num_inference_steps) + " must be between 1 and " +
                    std::to_string(max_steps) + " (the scheduler's num_train_timesteps; models use 20 to 50)");
  if (r.guidance_scale && !(*r.guidance_scale >= 0 && *r.guidance_scale <= kMaxGuidanceScale))  // NaN fails too
    throw UserError("--guidance-scale " + number(*r.guidance_scale) +
                    " must be between 0 and 100 (guidance runs when it is > 1; models use 1 to 20: Wan2.2 5, "
                    "HunyuanVideo-1.5 6)");
  if (r.flow_shift && !(*r.flow_shift >= kMinFlowShift && *r.flow_shift <= kMaxFlowShift))  // NaN fails too
    throw UserError("--flow-shift " + number(*r.flow_shift) +
                    " must be between 0.01 and 100 (models use 1 to 17: Wan 3 to 12; a shift s and 1/s mirror each "
                    "other)");
  if (r.max_sequence_length && *r.max_sequence_length < 1) throw UserError("max_sequence_length must be at least 1");
}

void check_initial_latents(const GenerationRequest& r, const Shape& want) {
  if (!r.initial_latents.defined()) return;
  if (r.initial_latents.shape() != want)
    throw UserError("initial latents have shape " + shape_str(r.initial_latents.shape()) + ", expected " +
                    shape_str(want) + " for " + std::to_string(r.num_frames) + " frames of " + std::to_string(r.height) +
                    "x" + std::to_string(r.width));
  // Noise must be finite: a NaN would run every step and decode to a video of NaN.
  if (const ops::NonFinite bad = ops::count_nonfinite(r.initial_latents); bad.count)
    throw UserError("initial latents hold " + std::to_string(bad.nan) + " NaN and " +
                    std::to_string(bad.count - bad.nan) + " Inf of " + std::to_string(r.initial_latents.numel()) +
                    " values; expected finite noise");
}

}  // namespace dattn::pipeline
