#pragma once
// Writing generated frames: the output format follows the file extension.
//   .mp4          H.264 (libx264 through the FFmpeg libraries), yuv420p, BT.709 limited range
//   .png          one image when there is one frame, else NAME_0000.png, NAME_0001.png, ...
//   .safetensors  the float frames themselves: tensor "video" [F,H,W,3] float32, for checking
// Frames are [F,H,W,3] (or [1,F,H,W,3]) fp32/fp64 RGB in [0,1]. For mp4 and png each value is clamped
// to [0,1] and quantized as diffusers' numpy_to_pil does, round(x * 255) (diffusers' export_to_video
// truncates instead; rounding is the unbiased choice and at most one level apart). The safetensors
// output keeps the values as given, converted to float32.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dattn/core/tensor.h"

namespace dattn {

enum class VideoFormat { MP4, PNG, SAFETENSORS };

// The format `path`'s extension selects (case-insensitive). Throws UserError naming the extension and
// the supported ones.
VideoFormat video_format_for(const std::string& path);

struct VideoWriteOptions {
  int fps = 16;                        // Wan's frame rate
  std::string h264_encoder = "libx264";  // the FFmpeg encoder for .mp4
  int crf = 18;                        // x264 constant rate factor: 0 lossless .. 51 worst; 18 looks lossless
};

// Everything that can be checked before generating: a supported extension, an existing writable folder,
// a path that is not a folder and can be written (probed by creating a file next to it), and for .mp4
// that this FFmpeg has the H.264 encoder. Throws UserError with the reason.
void check_output_path(const std::string& path, const VideoWriteOptions& options = {});
// Frame-size rules of the format (yuv420p H.264 needs even sizes); throws UserError.
void check_frame_size(const std::string& path, std::int64_t height, std::int64_t width);
// For a .png sequence of `frames` frames: no numbered frame's path is a folder (found after the run, it left
// the frames before it renamed and the rest missing). Throws UserError naming it; other formats pass.
void check_frame_paths(const std::string& path, std::int64_t frames);

// Writes `frames`; returns the files written (several for a png sequence). Throws UserError for a bad
// shape, dtype or path, NumericError (nothing written) when a frame value is NaN or Inf, and
// std::runtime_error when encoding fails.
std::vector<std::string> write_video(const std::string& path, const Tensor& frames,
                                     const VideoWriteOptions& options = {});

// A video written as its frames arrive (a VAE handing over a few frames at a time): the frames are
// checked, quantized and encoded on a thread of the writer's own while the caller goes on, and the files
// appear only at finish(), as write_video's do. Same formats, checks and errors as write_video, which is
// this writer given every frame at once.
class VideoStreamWriter {
 public:
  // The whole video's size. Runs check_output_path and check_frame_size (UserError) and opens the
  // encoder at a temporary name.
  VideoStreamWriter(const std::string& path, std::int64_t frames, std::int64_t height, std::int64_t width,
                    const VideoWriteOptions& options = {});
  // Without finish() (the run failed), stops the thread and leaves no file: an existing one stays as it was.
  ~VideoStreamWriter();
  VideoStreamWriter(const VideoStreamWriter&) = delete;
  VideoStreamWriter& operator=(const VideoStreamWriter&) = delete;

  // The next frames [n, H, W, 3] (or [1, n, H, W, 3]), fp32 or fp64 in [0, 1], host or device. Host frames
  // are read later, on the writer's thread, without a copy: leave them unchanged until finish(). Throws
  // UserError for a shape, dtype or count that does not fit the video, and rethrows a failure of the
  // encoding so far (the video cannot be finished).
  void add(const Tensor& frames);
  // Waits for the encoding and puts the files in place; returns them (several for a png sequence).
  // Throws NumericError (nothing written) when any frame held NaN or Inf, UserError when fewer frames
  // came than the video has, std::runtime_error when encoding failed. Call it once.
  std::vector<std::string> finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dattn
