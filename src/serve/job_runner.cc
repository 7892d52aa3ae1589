#include "dattn/serve/job_runner.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <utility>

#include "dattn/core/error.h"
#include "dattn/io/video_writer.h"
#include "dattn/serve/printable.h"

namespace dattn::serve {

const char* const kShutdownReason =
    "the server shut down (SIGTERM) before the job finished; submit it again";

std::string images_dir(const std::string& output_dir) { return (std::filesystem::path(output_dir) / "images").string(); }

nlohmann::json report_json(const GenerationReport& report) {
  nlohmann::json stages = nlohmann::json::object(), memory = nlohmann::json::array();
  for (const auto& [stage, ms] : report.stage_ms) stages[stage] = ms;
  for (const auto& m : report.stage_memory)
    memory.push_back({{"stage", m.stage}, {"peak_host_bytes", m.peak_host_bytes}, {"peak_device_bytes", m.peak_device_bytes}});
  return {{"stage_ms", stages}, {"stage_memory", memory}, {"guidance_scale", report.guidance_scale}};
}

GenerationResult JobRunner::generate(Job& job, const GenerationRequest& request,
                                     std::function<void(const Tensor&)> on_frames) {
  ProgressObserver observer;
  observer.on_frames = std::move(on_frames);
  observer.on_step = [&](int i, int, double, const Tensor&, double step_ms) {
    metrics_.observe_step(step_ms);
    if (job.persisted) store_.set_progress(job.id, i + 1);
  };
  observer.cancelled = [&] { return job.cancel.load(); };
  GenerationResult result = pipeline_.run(request, observer);
  metrics_.observe_stages(result.report.stage_ms);
  return result;
}

void JobRunner::run_video(Job& job) {
  // start() fails when the job was cancelled between being stored and being taken from the queue.
  if (!store_.start(job.id, job.request.num_inference_steps)) {
    job.state = JobState::Cancelled;
    return;
  }
  job.state = JobState::InProgress;
  const std::string path = video_path(output_dir_, job.id, format_);
  VideoWriteOptions video;
  video.fps = job.fps;
  // The frames are encoded as the VAE hands them over (made at the first, after the request's checks);
  // "writing" is what is left after the run.
  std::optional<VideoStreamWriter> writer;
  GenerationResult result = generate(job, job.request, [&](const Tensor& frames) {
    if (!writer) writer.emplace(path, job.request.num_frames, job.request.height, job.request.width, video);
    writer->add(frames);
  });
  const auto write_start = std::chrono::steady_clock::now();
  if (!writer) throw std::logic_error("job " + job.id + ": the pipeline handed over no frames");
  writer->finish();
  // The file written is a stage of the report, as `dattn generate` reports it: what a client waits for
  // beyond the stages is the queue and HTTP.
  const double write_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - write_start).count();
  result.report.stage_ms.emplace_back("writing", write_ms);
  metrics_.observe_stages({{"writing", write_ms}});
  job.report = std::move(result.report);
  if (store_.finish(job.id, JobState::Completed, "", report_json(job.report))) {
    job.state = JobState::Completed;
  } else {  // cancelled by DELETE while it was decoded or written: its file must not stay
    std::filesystem::remove(path);
    job.state = JobState::Cancelled;
  }
}

void JobRunner::run_images(Job& job) {
  job.state = JobState::InProgress;
  const std::string dir = images_dir(output_dir_);
  for (int i = 0; i < job.count; ++i) {
    GenerationRequest request = job.request;
    request.seed += static_cast<std::uint64_t>(i);
    GenerationResult result = generate(job, request);
    const std::string path = (std::filesystem::path(dir) / (job.id + "_" + std::to_string(i) + ".png")).string();
    write_video(path, result.frames);
    std::ifstream in(path, std::ios::binary);
    job.images_png.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    in.close();
    std::filesystem::remove(path);  // the answer carries the image; nothing is kept
    job.report = std::move(result.report);
  }
  job.state = JobState::Completed;
}

void JobRunner::operator()(Job& job) {
  JobState end = JobState::Failed;
  std::string error;
  try {
    job.kind == JobKind::Video ? run_video(job) : run_images(job);
    end = job.state;
  } catch (const RunCancelled&) {
    end = stopping_ ? JobState::Failed : JobState::Cancelled;
    error = stopping_ ? kShutdownReason : "cancelled while running";
  } catch (const UserError& e) {
    error = e.what();
  } catch (const NumericError& e) {
    error = std::string("numeric error: ") + e.what();
  } catch (const std::exception& e) {
    error = std::string("internal error: ") + e.what();
  }
  if (end == JobState::Cancelled && error.empty())  // DELETE before it started, or while it was decoded or written
    error = "cancelled by DELETE";
  if (end != JobState::Completed) {
    if (job.persisted) {
      store_.finish_or_log(job.id, end, error);  // a no-op when DELETE already marked it cancelled
      remove_videos(output_dir_, job.id);
    }
    if (!error.empty())  // one log line whatever the message holds
      std::fprintf(stderr, "[dattn serve] job %s %s: %s\n", job.id.c_str(), state_name(end), printable(error).c_str());
  }
  job.state = end;
  job.error = error;
  job.done();
}

}  // namespace dattn::serve
