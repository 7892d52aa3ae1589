#pragma once
// Runs one job on the loaded pipeline (the queue's worker calls it): records each step in the job
// store, stops at the next step when cancelled, writes the video under --output-dir in the server's
// --video-format and records how the job ended. Never throws: every failure becomes the job's error.
#include <atomic>
#include <functional>
#include <string>
#include <utility>

#include "dattn/pipeline/pipeline.h"
#include "dattn/serve/job_queue.h"
#include "dattn/serve/job_store.h"
#include "dattn/serve/metrics.h"
#include "dattn/serve/video_files.h"

namespace dattn::serve {

// Where the PNGs of an image request live while it is answered: DIR/images/ (videos: video_files.h).
std::string images_dir(const std::string& output_dir);

class JobRunner {
 public:
  // `stopping`: set at shutdown, so a job cancelled by it ends failed (the client did not cancel it).
  JobRunner(Pipeline& pipeline, JobStore& store, Metrics& metrics, std::string output_dir, VideoFormat format,
            const std::atomic<bool>& stopping)
      : pipeline_(pipeline), store_(store), metrics_(metrics), output_dir_(std::move(output_dir)), format_(format),
        stopping_(stopping) {}
  void operator()(Job& job);

 private:
  // `on_frames`: the observer's (the video written while it decodes).
  GenerationResult generate(Job& job, const GenerationRequest& request, std::function<void(const Tensor&)> on_frames = {});
  void run_video(Job& job);
  void run_images(Job& job);

  Pipeline& pipeline_;
  JobStore& store_;
  Metrics& metrics_;
  std::string output_dir_;
  VideoFormat format_;
  const std::atomic<bool>& stopping_;
};

// Why a job that the shutdown interrupted failed.
extern const char* const kShutdownReason;

// The report a completed job keeps: stage durations (ms; the pipeline's, then "writing": the video file
// written, as `dattn generate` reports it) and peak memory (bytes) per stage group.
nlohmann::json report_json(const GenerationReport& report);

}  // namespace dattn::serve
