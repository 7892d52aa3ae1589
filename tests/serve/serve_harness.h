#pragma once
// What the serve tests share: the tiny golden Wan pipeline behind a server on an ephemeral loopback
// port (in this process), a cpp-httplib client for it, and small requests that run in well under a
// second (64x32, 5 frames: ~10 ms a step on one CPU core) or for as long as a test needs (steps).
// Videos are mp4 where the build has FFmpeg, else safetensors (kVideoFormat); a test of mp4 itself
// starts with DATTN_SKIP_WITHOUT_FFMPEG().
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "dattn/pipeline/pipeline.h"
#include "dattn/serve/server.h"
#include "dattn/serve/video_files.h"
#include "support/golden_dir.h"

namespace dattn::testing {

#ifdef DATTN_WITH_FFMPEG
inline constexpr VideoFormat kVideoFormat = VideoFormat::MP4;
#define DATTN_SKIP_WITHOUT_FFMPEG() (void)0
#else
inline constexpr VideoFormat kVideoFormat = VideoFormat::SAFETENSORS;
#define DATTN_SKIP_WITHOUT_FFMPEG() \
  GTEST_SKIP() << "needs mp4/png output: this build has no FFmpeg (DATTN_VIDEO=off or no FFmpeg libraries)"
#endif

// Whether `bytes` are a video of kVideoFormat: an ISO media file (mp4), or a safetensors file.
inline bool is_harness_video(const std::string& bytes) {
  if (kVideoFormat == VideoFormat::MP4) return bytes.size() > 8 && bytes.substr(4, 4) == "ftyp";
  return bytes.size() > 9 && bytes[8] == '{';  // an 8-byte header length, then the JSON header
}

inline std::string tiny_model() { return golden_dir() + "/wan_tiny/pipeline"; }

// A fresh folder per test process (ctest runs cases as parallel processes).
inline std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "dattn_serve_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

inline std::unique_ptr<Pipeline> load_tiny() {
  PipelineOptions options;
  options.residency = Residency::Resident;
  return load_pipeline(tiny_model(), options);
}

inline serve::ServeOptions tiny_options(const std::string& dir) {
  serve::ServeOptions o;
  o.port = 0;
  o.output_dir = dir;
  o.model = "wan-tiny";
  o.max_queue = 4;
  o.video_format = kVideoFormat;
  o.limits.max_steps = 1000;
  o.defaults.width = 64;
  o.defaults.height = 32;
  o.defaults.num_frames = 5;
  o.defaults.num_inference_steps = 2;
  return o;
}

// A video request body of the tiny size.
inline std::string video_json(int steps, std::uint64_t seed = 0, const std::string& prompt = "a red fox") {
  return nlohmann::json{{"prompt", prompt}, {"size", "64x32"}, {"num_frames", 5}, {"num_inference_steps", steps},
                        {"seed", seed}}
      .dump();
}

struct RunningServer {
  std::unique_ptr<serve::Server> server;
  int port = 0;

  explicit RunningServer(serve::ServeOptions options, bool load = true)
      : server(std::make_unique<serve::Server>(std::move(options))) {
    port = server->start();
    if (load) server->load(load_tiny);
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(60, 0);
    return c;
  }
};

inline nlohmann::json body_of(const httplib::Result& r) {
  return r ? nlohmann::json::parse(r->body, nullptr, false) : nlohmann::json();
}

// Polls GET /v1/videos/ID until `done` holds for it (or 60 s pass); the last object seen.
template <class Done>
nlohmann::json wait_for(httplib::Client& c, const std::string& id, Done done) {
  nlohmann::json job;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    job = body_of(c.Get("/v1/videos/" + id));
    if (job.is_object() && (done(job) || !job.contains("id"))) return job;  // done, or an error (e.g. 404)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return job;
}

inline nlohmann::json wait_finished(httplib::Client& c, const std::string& id) {
  return wait_for(c, id, [](const nlohmann::json& j) {
    const std::string s = j.value("status", "");
    return s == "completed" || s == "failed" || s == "cancelled";
  });
}

}  // namespace dattn::testing
