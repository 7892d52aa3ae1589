#pragma once
// `dattn serve`: an OpenAI / vLLM-Omni style HTTP server over one loaded Pipeline (README, "Serving").
//
//   Server server(options);
//   int port = server.start();             // job store opened, socket bound: /health answers 503
//   server.load([&] { return load_pipeline(dir, resident_options); });  // then 200, jobs run
//   ...                                    // SIGTERM
//   server.shutdown();                     // stop accepting, fail the running and queued jobs, exit
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "dattn/pipeline/pipeline.h"
#include "dattn/serve/request_parse.h"
#include "dattn/serve/video_files.h"

namespace httplib {
class Server;
}

namespace dattn::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";  // loopback unless asked: the API has no TLS
  int port = 8000;                 // 0: any free port (start() returns it)
  std::string api_key;             // when set, /v1/* needs "Authorization: Bearer KEY"
  std::size_t max_queue = 16;      // jobs waiting; more are refused with 429
  std::string output_dir = "dattn-serve";  // jobs.sqlite and videos/
  // What /v1/videos answers with: mp4 (needs FFmpeg) or safetensors (the float frames; any build).
  VideoFormat video_format = VideoFormat::MP4;
  std::string model;               // the model id clients name and /v1/models lists
  ServeLimits limits;
  RequestDefaults defaults;
  int http_threads = 32;           // connections served at once (each keep-alive client holds one)
  // Seconds a request's headers and body may take to arrive, in all (not per byte: a client trickling bytes
  // held a thread for ever); past them the connection is answered 408 and closed.
  int request_read_timeout_s = 30;
};

struct ServerState;

class Server {
 public:
  explicit Server(ServeOptions options);
  ~Server();  // shutdown()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Opens the job store (marking jobs a previous process left unfinished as failed), binds, and serves
  // on a thread of its own; returns the port. Throws UserError when the store or the port cannot be had,
  // or when this build cannot write --video-format (mp4 without FFmpeg) or the defaults exceed the limits,
  // before anything is opened. Prints nothing: what it found is printed by load(), once the start succeeded.
  int start();
  // Builds the pipeline (the caller's loader: load_pipeline with Residency::Resident), checks the defaults
  // with it (UserError) and starts the worker; until it returns, /health and /v1/* answer 503. Then prints
  // the start's lines ("listening on http://HOST:PORT", ..., "ready: MODEL"): a failed start prints none.
  void load(const std::function<std::unique_ptr<Pipeline>()>& loader);
  // Stops accepting, cancels the running job at its next step and fails it and every queued job
  // with "the server shut down", then stops HTTP. Safe to call twice.
  void shutdown();

 private:
  std::unique_ptr<ServerState> state_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
};

}  // namespace dattn::serve
