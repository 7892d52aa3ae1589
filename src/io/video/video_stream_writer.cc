// VideoStreamWriter: a queue of frame tensors and one thread that checks, quantizes and encodes them in
// order. NaN or Inf stops the encoding but not the counting, so that finish() names every bad value as
// write_video always did.
#include <condition_variable>
#include <cerrno>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "dattn/core/error.h"
#include "dattn/io/output_file.h"
#include "dattn/io/safetensors_writer.h"
#include "dattn/io/video_writer.h"
#include "io/video/encoders.h"
#include "io/video/frames.h"
#include "io/video/output_path.h"

namespace dattn {

using video_detail::FrameGeometry;

struct VideoStreamWriter::State {
  std::string path;
  VideoFormat format = VideoFormat::MP4;
  FrameGeometry g;
  std::int64_t received = 0;  // frames given to add(), the caller's side
  bool finished = false;

  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Tensor> queue;
  bool closing = false;
  std::exception_ptr error;  // the first failure on the thread

  // The thread's side. The files are declared before the encoders so that an encoder is closed before
  // its temporary file is removed.
  std::optional<PendingFile> file;  // mp4 and safetensors
  std::vector<PendingFile> png_files;
  std::unique_ptr<video_detail::Mp4Stream> mp4;
  std::ofstream raw;  // safetensors: the float32 frames after the prefix
  video_detail::NonFiniteValues bad;
  std::size_t values_seen = 0;
  std::int64_t frames_written = 0;
  std::thread thread;

  std::size_t frame_values() const { return static_cast<std::size_t>(g.height * g.width * 3); }
  void open(const VideoWriteOptions& options);
  void write(const Tensor& frames);
  void run();
  std::vector<std::string> commit();
};

void VideoStreamWriter::State::open(const VideoWriteOptions& options) {
  switch (format) {
    case VideoFormat::MP4:
      file.emplace(path);
      mp4 = std::make_unique<video_detail::Mp4Stream>(file->temp(), g, options);
      break;
    case VideoFormat::PNG:
      break;  // one file per frame, made as the frames come
    case VideoFormat::SAFETENSORS: {
      WrittenTensor t{"video", "F32", {g.frames, g.height, g.width, 3}, {}};
      const std::string prefix =
          safetensors_prefix(path, {t}, {{"format", "dattn video frames [F,H,W,3] RGB in [0,1]"}});
      file.emplace(path);
      raw.open(file->temp(), std::ios::binary | std::ios::trunc);
      if (!raw) throw UserError(path + ": cannot open for writing: " + std::strerror(errno));
      raw.write(prefix.data(), static_cast<std::streamsize>(prefix.size()));
      break;
    }
  }
}

// One tensor of frames: counted for NaN/Inf always, written only while every value so far was finite.
void VideoStreamWriter::State::write(const Tensor& frames) {
  const video_detail::NonFiniteValues found = video_detail::find_nonfinite(frames);
  if (found.count && bad.count == 0) bad.first = values_seen + found.first;
  bad.count += found.count;
  values_seen += static_cast<std::size_t>(frames.numel());
  if (bad.count) return;
  const std::int64_t n = frames.numel() / static_cast<std::int64_t>(frame_values());
  if (format == VideoFormat::SAFETENSORS) {
    const Tensor f32 = frames.dtype() == DType::F32 ? frames : frames.to(DType::F32);
    raw.write(static_cast<const char*>(f32.data()), static_cast<std::streamsize>(f32.bytes()));
    if (!raw) throw UserError(path + ": write failed (disk full?)");
    frames_written += n;
    return;
  }
  const std::vector<std::uint8_t> rgb = video_detail::quantize_frames(frames, path);
  for (std::int64_t f = 0; f < n; ++f, ++frames_written) {
    const std::uint8_t* pixels = rgb.data() + f * static_cast<std::int64_t>(frame_values());
    if (format == VideoFormat::MP4) {
      mp4->add_frame(pixels);
    } else {
      png_files.emplace_back(g.frames == 1 ? path : video_detail::png_sequence_path(path, frames_written));
      video_detail::write_png(png_files.back().temp(), pixels, g.height, g.width);
    }
  }
}

void VideoStreamWriter::State::run() {
  while (true) {
    Tensor next;
    {
      std::unique_lock lock(mutex);
      ready.wait(lock, [&] { return closing || !queue.empty(); });
      if (queue.empty()) return;  // closing and drained
      next = std::move(queue.front());
      queue.pop_front();
      if (error) continue;  // nothing more is written after a failure
    }
    try {
      write(next);
    } catch (...) {
      const std::lock_guard lock(mutex);
      error = std::current_exception();
    }
  }
}

std::vector<std::string> VideoStreamWriter::State::commit() {
  std::vector<std::string> written;
  switch (format) {
    case VideoFormat::MP4:
      mp4->finish();
      mp4.reset();
      file->commit();
      written.push_back(path);
      break;
    case VideoFormat::PNG:
      // Every frame was written before any is renamed, so a failure leaves an existing sequence as it was.
      for (PendingFile& f : png_files) {
        f.commit();
        written.push_back(f.path());
      }
      // A sequence replaces an earlier one whole: the frames a longer run left after this one's last go
      // (up to the first missing number), or the folder would hold two videos.
      if (png_files.size() > 1) {
        for (auto i = static_cast<std::int64_t>(png_files.size());; ++i) {
          const std::string stale = video_detail::png_sequence_path(path, i);
          std::error_code ec;
          if (!std::filesystem::is_regular_file(stale, ec) || !std::filesystem::remove(stale, ec)) break;
        }
      }
      break;
    case VideoFormat::SAFETENSORS:
      raw.close();
      if (!raw) throw UserError(path + ": write failed (disk full?)");
      file->commit();
      written.push_back(path);
      break;
  }
  return written;
}

VideoStreamWriter::VideoStreamWriter(const std::string& path, std::int64_t frames, std::int64_t height,
                                     std::int64_t width, const VideoWriteOptions& options)
    : state_(std::make_unique<State>()) {
  check_output_path(path, options);
  State& s = *state_;
  s.path = path;
  s.format = video_format_for(path);
  if (frames < 1 || height < 1 || width < 1)
    throw UserError(path + ": no pixels to write in a video of " + std::to_string(frames) + " frames of " +
                    std::to_string(width) + "x" + std::to_string(height));
  check_frame_size(path, height, width);
  check_frame_paths(path, frames);
  s.g = {frames, height, width};
  s.open(options);
  s.thread = std::thread([&s] { s.run(); });
}

VideoStreamWriter::~VideoStreamWriter() {
  State& s = *state_;
  if (!s.thread.joinable()) return;
  {
    const std::lock_guard lock(s.mutex);
    s.queue.clear();  // the run failed: what is queued is not wanted
    s.closing = true;
  }
  s.ready.notify_one();
  s.thread.join();
}

void VideoStreamWriter::add(const Tensor& frames) {
  State& s = *state_;
  if (s.finished) throw std::logic_error(s.path + ": VideoStreamWriter::add after finish()");
  const FrameGeometry g = video_detail::frame_geometry(frames, s.path);
  if (g.height != s.g.height || g.width != s.g.width)
    throw UserError(s.path + ": frames " + frames.describe() + " do not fit a " + std::to_string(s.g.width) + "x" +
                    std::to_string(s.g.height) + " video");
  if (s.received + g.frames > s.g.frames)
    throw UserError(s.path + ": " + std::to_string(s.received + g.frames) + " frames given to a video of " +
                    std::to_string(s.g.frames));
  Tensor host = frames.device() == Device::CPU ? frames : frames.to(Device::CPU);
  {
    const std::lock_guard lock(s.mutex);
    if (s.error) std::rethrow_exception(s.error);
    s.queue.push_back(std::move(host));
  }
  s.received += g.frames;
  s.ready.notify_one();
}

std::vector<std::string> VideoStreamWriter::finish() {
  State& s = *state_;
  if (s.finished) throw std::logic_error(s.path + ": VideoStreamWriter::finish called twice");
  s.finished = true;
  {
    const std::lock_guard lock(s.mutex);
    s.closing = true;
  }
  s.ready.notify_one();
  s.thread.join();
  if (s.error) std::rethrow_exception(s.error);
  if (s.bad.count) video_detail::throw_nonfinite(s.bad, s.values_seen, s.g, s.path);
  if (s.received != s.g.frames)
    throw UserError(s.path + ": " + std::to_string(s.received) + " of the video's " + std::to_string(s.g.frames) +
                    " frames were given; nothing written");
  return s.commit();
}

}  // namespace dattn
