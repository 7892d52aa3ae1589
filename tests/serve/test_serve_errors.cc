// Malformed and refused requests: each answered 4xx with OpenAI's error JSON naming the field, the
// model's own checks with `dattn generate`'s messages, and the server still serving afterwards.
#include <string>
#include <thread>

#include "serve/serve_harness.h"

namespace dattn::testing {
namespace {

struct Refusal {
  std::string body;
  int status;
  std::string message_part;
  nlohmann::json param;
};

TEST(ServeErrors, MalformedRequestsAre4xxWithAMessage) {
  auto options = tiny_options(fresh_dir("errors"));
  options.limits.max_width = 128;
  options.limits.max_frames = 9;
  options.limits.max_prompt_chars = 100;
  RunningServer s(options);
  auto c = s.client();
  const std::vector<Refusal> refusals = {
      {"{not json", 400, "Invalid JSON in the request body: parse error at line 1, column 3", "body"},
      // A key given twice was last-wins (a form's repeated field is refused).
      {R"({"prompt": "x", "num_frames": 5, "num_frames": 9})", 400, "key 'num_frames' is given twice", "body"},
      {"[1, 2]", 400, "JSON object", "body"},
      {R"({"size": "64x32"})", 400, "'prompt' is required", "prompt"},
      {R"({"prompt": 42})", 400, "must be a string", "prompt"},
      {R"({"prompt": "x", "num_frames": "5"})", 400, "must be an integer", "num_frames"},
      {R"({"prompt": "x", "num_frames": 5.5})", 400, "must be an integer", "num_frames"},
      {R"({"prompt": "x", "width": 1e300})", 400, "must be an integer", "width"},
      {R"({"prompt": "x", "seed": 184467440737095516160})", 400, "whole number", "seed"},
      {R"({"prompt": "x", "seed": -1})", 400, "whole number", "seed"},
      {R"({"prompt": "x", "guidance_scale": "high"})", 400, "finite number", "guidance_scale"},
      {R"({"prompt": "x", "size": "64by32"})", 400, "WIDTHxHEIGHT", "size"},
      {R"({"prompt": "x", "size": "-64x32"})", 400, "WIDTHxHEIGHT", "size"},
      {R"({"prompt": "x", "size": "0x32"})", 400, "two whole numbers from 1", "size"},
      // width/height repeating size must agree with it: neither silently wins.
      {R"({"prompt": "x", "size": "64x32", "width": 96})", 400, "'width' 96 disagrees with 'size' \"64x32\"", "width"},
      {R"({"prompt": "x", "size": "64x32", "height": 64})", 400, "'height' 64 disagrees", "height"},
      {R"({"prompt": "x", "colour": "red"})", 400, "unknown field 'colour'", "colour"},
      {R"({"prompt": "x", "num_frames": 5, "seconds": "1"})", 400, "not both", "seconds"},
      {R"({"prompt": "x", "fps": 0})", 400, "'fps' must be an integer from 1 to 240", "fps"},
      {R"({"prompt": "x", "model": "sora-2"})", 404, "not served here", "model"},
      // The server's limits, before the model is asked.
      {R"({"prompt": "x", "width": 4096})", 400, "above this server's limit of 128 (--max-width)", "width"},
      {R"({"prompt": "x", "num_frames": 4001})", 400, "(--max-frames)", "num_frames"},
      {R"({"prompt": ")" + std::string(101, 'a') + R"("})", 400, "(--max-prompt-chars)", "prompt"},
      // The model's checks, with the messages of `dattn generate`.
      {R"({"prompt": "x", "num_frames": 6})", 400, "--num-frames 6 must be 4k+1", "num_frames"},
      {R"({"prompt": "x", "size": "48x32"})", 400, "--width 48 must be a positive multiple of", "width"},
      {R"({"prompt": "x", "flow_shift": 1000})", 400, "--flow-shift 1000 must be between", "flow_shift"},
      {R"({"prompt": "x", "guidance_scale": -1})", 400, "--guidance-scale -1 must be between 0 and 100", "guidance_scale"},
      // 1e308 was queued and failed at step 1 with Inf latents, blaming the weights.
      {R"({"prompt": "x", "guidance_scale": 1e308})", 400, "--guidance-scale 1e+308 must be between", "guidance_scale"},
  };
  for (const Refusal& f : refusals) {
    const auto r = c.Post("/v1/videos", f.body, "application/json");
    ASSERT_TRUE(r) << f.body;
    EXPECT_EQ(r->status, f.status) << f.body << " -> " << r->body;
    const nlohmann::json j = body_of(r);
    ASSERT_TRUE(j.contains("error")) << r->body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(f.message_part), std::string::npos) << r->body;
    EXPECT_EQ(j["error"]["param"], f.param) << r->body;
  }
  // A body that is neither JSON nor a form; a form field that is a file; a broken multipart body.
  auto r = c.Post("/v1/videos", "prompt", "text/plain");
  EXPECT_EQ(r->status, 415);
  EXPECT_NE(body_of(r)["error"]["message"].get<std::string>().find("Content-Type"), std::string::npos);
  r = c.Post("/v1/videos", httplib::MultipartFormDataItems{{"prompt", "x", "", ""}, {"input_reference", "PNG", "a.png", "image/png"}});
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(body_of(r)["error"]["param"], "input_reference") << r->body;
  r = c.Post("/v1/videos", "--b\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nx",
             "multipart/form-data; boundary=b");
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_TRUE(body_of(r).contains("error")) << r->body;
  // Nothing refused was queued; the server still runs a good request.
  EXPECT_TRUE(body_of(c.Get("/v1/videos"))["data"].empty());
  r = c.Post("/v1/videos/sync", video_json(1), "application/json");
  EXPECT_EQ(r->status, 200) << r->body;
  // width and height that repeat size are taken.
  r = c.Post("/v1/videos", R"({"prompt": "x", "size": "64x32", "width": 64, "height": 32, "num_frames": 5,
                              "num_inference_steps": 1})", "application/json");
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(body_of(r)["size"], "64x32") << r->body;
  // A form's prompt is bytes: invalid UTF-8 is refused before queueing, as `dattn generate` refuses it.
  r = c.Post("/v1/videos", httplib::MultipartFormDataItems{{"prompt", "a \xff\xfe fox", "", ""}});
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(body_of(r)["error"]["message"], "--prompt is not valid UTF-8 at byte 2") << r->body;
  EXPECT_EQ(body_of(r)["error"]["param"], "prompt") << r->body;
}

// A message quoting what the client sent was cut at a NUL (what() ends there) and split by a raw newline:
// control characters are escaped in the message itself.
TEST(ServeErrors, ControlCharactersInEchoedValuesAreEscaped) {
  RunningServer s(tiny_options(fresh_dir("escape")));
  auto c = s.client();
  auto r = c.Post("/v1/videos", R"({"prompt": "x", "model": "a\u0000b\nc"})", "application/json");
  EXPECT_EQ(r->status, 404) << r->body;
  EXPECT_EQ(body_of(r)["error"]["message"], "model 'a\\u0000b\\nc' is not served here; this server runs 'wan-tiny'")
      << r->body;
  r = c.Patch("/v1/videos/a%00b%0Ac", "{}", "application/json");
  EXPECT_EQ(r->status, 405) << r->body;
  EXPECT_NE(body_of(r)["error"]["message"].get<std::string>().find("on /v1/videos/a\\u0000b\\nc; it takes"),
            std::string::npos) << r->body;
}

TEST(ServeErrors, BodyTooLargeIs413) {
  RunningServer s(tiny_options(fresh_dir("large")));  // the default 1 MiB body limit
  auto c = s.client();
  const std::string prompt(10 << 20, 'a');  // a 10 MB prompt
  const auto r = c.Post("/v1/videos", nlohmann::json{{"prompt", prompt}}.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(body_of(r)["error"]["message"].get<std::string>().find("--max-body-bytes"), std::string::npos) << r->body;
  EXPECT_EQ(s.client().Get("/health")->status, 200);
}

TEST(ServeErrors, FullQueueIs429AndCancelFreesTheWorker) {
  auto options = tiny_options(fresh_dir("queue"));
  options.max_queue = 1;
  RunningServer s(options);
  auto c = s.client();
  const std::string running = body_of(c.Post("/v1/videos", video_json(1000), "application/json"))["id"];
  nlohmann::json job = wait_for(c, running, [](const nlohmann::json& j) { return j["step"] >= 1; });
  ASSERT_EQ(job["status"], "in_progress") << job.dump();
  EXPECT_EQ(job["total_steps"], 1000);
  const std::string waiting = body_of(c.Post("/v1/videos", video_json(1), "application/json"))["id"];
  EXPECT_EQ(body_of(c.Get("/v1/videos/" + waiting))["status"], "queued");
  auto r = c.Post("/v1/videos", video_json(1), "application/json");
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(body_of(r)["error"]["code"], "queue_full");
  EXPECT_EQ(c.Get("/v1/videos/" + running + "/content")->status, 409);  // not completed yet

  // Cancelling the queued job answers cancelled at once; the running one stops within a step.
  EXPECT_EQ(body_of(c.Delete("/v1/videos/" + waiting))["status"], "cancelled");
  job = body_of(c.Delete("/v1/videos/" + running));
  EXPECT_EQ(job["status"], "cancelled");
  const auto freed = std::chrono::steady_clock::now();
  const std::string next = body_of(c.Post("/v1/videos", video_json(1), "application/json"))["id"];
  EXPECT_EQ(wait_finished(c, next)["status"], "completed");
  EXPECT_LT(std::chrono::steady_clock::now() - freed, std::chrono::seconds(20));  // not 1000 steps later
  job = body_of(c.Get("/v1/videos/" + running));
  EXPECT_EQ(job["status"], "cancelled");
  EXPECT_LT(job["step"].get<int>(), 1000);
  EXPECT_EQ(job["error"]["message"], "cancelled while running");
}

// Each sync request holds an HTTP thread until its job ends; enough of them took every thread and /health
// timed out. Past http_threads - 8 waiting, a sync request is 429 and the server keeps answering.
TEST(ServeErrors, WaitingSyncRequestsLeaveThreadsForTheRest) {
  auto options = tiny_options(fresh_dir("waiting"));
  options.http_threads = 10;  // 2 may wait
  RunningServer s(options);
  auto c = s.client();
  const std::string running = body_of(c.Post("/v1/videos", video_json(1000), "application/json"))["id"];
  ASSERT_EQ(wait_for(c, running, [](const nlohmann::json& j) { return j["step"] >= 1; })["status"], "in_progress");
  std::vector<std::thread> waiting;
  std::vector<int> statuses(2, 0);
  for (int i = 0; i < 2; ++i)
    waiting.emplace_back([&, i] {
      auto w = s.client();
      w.set_read_timeout(120, 0);
      if (const auto r = w.Post("/v1/videos/sync", video_json(1), "application/json")) statuses[i] = r->status;
    });
  const auto by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (c.Get("/metrics")->body.find("dattn_queue_depth 2") == std::string::npos && std::chrono::steady_clock::now() < by)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto r = c.Post("/v1/videos/sync", video_json(1), "application/json");
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(body_of(r)["error"]["code"], "too_many_waiting");
  EXPECT_EQ(c.Get("/health")->status, 200);
  EXPECT_EQ(body_of(c.Delete("/v1/videos/" + running))["status"], "cancelled");
  for (auto& t : waiting) t.join();
  EXPECT_EQ(statuses, (std::vector<int>{200, 200}));
  // The slots are given back: a sync request runs again.
  EXPECT_EQ(c.Post("/v1/videos/sync", video_json(1), "application/json")->status, 200);
}

}  // namespace
}  // namespace dattn::testing
