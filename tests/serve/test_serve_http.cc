// Every endpoint of `dattn serve` through real HTTP on loopback, with cpp-httplib's client: the
// answers, their shapes, and each error code in OpenAI's JSON form.
#include <string>
#include <thread>

#include "serve/serve_harness.h"

namespace dattn::testing {
namespace {

void expect_error(const httplib::Result& r, int status, const std::string& message_part, const char* param = nullptr) {
  ASSERT_TRUE(r) << "no answer";
  EXPECT_EQ(r->status, status) << r->body;
  const nlohmann::json j = body_of(r);
  ASSERT_TRUE(j.contains("error")) << r->body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(message_part), std::string::npos) << r->body;
  EXPECT_TRUE(j["error"].contains("type") && j["error"].contains("code") && j["error"].contains("param")) << r->body;
  if (param) {
    EXPECT_EQ(j["error"]["param"], param) << r->body;
  }
}

TEST(ServeHttp, VideoLifecycleJsonAndMultipart) {
  DATTN_SKIP_WITHOUT_FFMPEG();  // test_serve_formats.cc has the safetensors lifecycle
  const std::string dir = fresh_dir("lifecycle");
  RunningServer s(tiny_options(dir));
  auto c = s.client();
  auto r = c.Post("/v1/videos", video_json(2, 7), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  nlohmann::json job = body_of(r);
  EXPECT_EQ(job["object"], "video");
  EXPECT_EQ(job["status"], "queued");
  EXPECT_EQ(job["size"], "64x32");
  EXPECT_EQ(job["model"], "wan-tiny");
  EXPECT_TRUE(job["created_at"].is_number_integer());
  const std::string id = job["id"];
  job = wait_finished(c, id);
  ASSERT_EQ(job["status"], "completed") << job.dump();
  EXPECT_EQ(job["progress"], 100);
  EXPECT_EQ(job["step"], 2);
  EXPECT_TRUE(job["report"]["stage_ms"].contains("denoising"));
  EXPECT_TRUE(job["request"]["guidance_scale"].is_null());  // not given: the model's default ran
  EXPECT_EQ(job["report"]["guidance_scale"], 5.0);           // WanPipeline's
  auto content = c.Get("/v1/videos/" + id + "/content");
  ASSERT_TRUE(content);
  EXPECT_EQ(content->status, 200);
  EXPECT_EQ(content->get_header_value("Content-Type"), "video/mp4");
  EXPECT_EQ(content->body.substr(4, 4), "ftyp");  // an ISO media file

  // The same request as multipart/form-data (vLLM-Omni's clients), with seconds and fps for the length.
  const httplib::MultipartFormDataItems form = {{"prompt", "a red fox", "", ""}, {"size", "64x32", "", ""},
                                                {"seconds", "0.25", "", ""},     {"fps", "16", "", ""},
                                                {"num_inference_steps", "2", "", ""}, {"seed", "7", "", ""}};
  r = c.Post("/v1/videos", form);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  job = wait_finished(c, body_of(r)["id"]);
  ASSERT_EQ(job["status"], "completed") << job.dump();
  EXPECT_EQ(job["request"]["num_frames"], 5);  // 0.25 s at 16 fps after the first frame
  EXPECT_EQ(c.Get("/v1/videos/" + job["id"].get<std::string>() + "/content")->body.substr(4, 4), "ftyp");

  // DELETE of a finished job removes it and its file.
  const std::string file = dir + "/videos/" + id + ".mp4";
  EXPECT_TRUE(std::filesystem::exists(file));
  r = c.Delete("/v1/videos/" + id);
  ASSERT_TRUE(r);
  EXPECT_EQ(body_of(r)["deleted"], true) << r->body;
  expect_error(c.Get("/v1/videos/" + id), 404, "no video");
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST(ServeHttp, ListPaginatesInCreationOrder) {
  RunningServer s(tiny_options(fresh_dir("list")));
  auto c = s.client();
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(body_of(c.Post("/v1/videos", video_json(1, i), "application/json"))["id"]);
  nlohmann::json page = body_of(c.Get("/v1/videos?limit=2"));
  ASSERT_EQ(page["data"].size(), 2u) << page.dump();
  EXPECT_EQ(page["object"], "list");
  EXPECT_EQ(page["data"][0]["id"], ids[2]);  // newest first, as OpenAI's default order
  EXPECT_EQ(page["data"][1]["id"], ids[1]);
  EXPECT_EQ(page["has_more"], true);
  page = body_of(c.Get("/v1/videos?limit=2&after=" + page["last_id"].get<std::string>()));
  ASSERT_EQ(page["data"].size(), 1u);
  EXPECT_EQ(page["data"][0]["id"], ids[0]);
  EXPECT_EQ(page["has_more"], false);
  page = body_of(c.Get("/v1/videos?order=asc&limit=1"));
  EXPECT_EQ(page["data"][0]["id"], ids[0]);
  expect_error(c.Get("/v1/videos?order=sideways"), 400, "asc or desc", "order");
  expect_error(c.Get("/v1/videos?limit=0"), 400, "from 1 to 100", "limit");
  expect_error(c.Get("/v1/videos?after=video_00000000000000000000000000000000"), 400, "names no video", "after");
  for (const auto& id : ids) wait_finished(c, id);
}

TEST(ServeHttp, SyncAnswersTheVideoWithStageHeaders) {
  DATTN_SKIP_WITHOUT_FFMPEG();
  RunningServer s(tiny_options(fresh_dir("sync")));
  auto c = s.client();
  auto r = c.Post("/v1/videos/sync", video_json(2), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "video/mp4");
  EXPECT_EQ(r->body.substr(4, 4), "ftyp");
  const nlohmann::json stages = nlohmann::json::parse(r->get_header_value("X-Stage-Durations-Ms"));
  EXPECT_GT(stages.value("denoising", 0.0), 0.0) << stages.dump();
  // In the order the stages ran (the header was sorted by name: denoising before text encoding).
  const std::string text = r->get_header_value("X-Stage-Durations-Ms");
  EXPECT_LT(text.find("\"text encoding\""), text.find("\"denoising\"")) << text;
  EXPECT_LT(text.find("\"denoising\""), text.find("\"vae decode\"")) << text;
  EXPECT_LT(text.find("\"vae decode\""), text.find("\"writing\"")) << text;
  EXPECT_GT(std::stoll(r->get_header_value("X-Peak-Host-Memory-Bytes")), 0);
  const std::string id = r->get_header_value("X-Video-Id");
  EXPECT_EQ(body_of(c.Get("/v1/videos/" + id))["status"], "completed");
  EXPECT_EQ(c.Get("/v1/videos/" + id + "/content")->body, r->body);
}

TEST(ServeHttp, AClientThatHangsUpCancelsNothing) {
  RunningServer s(tiny_options(fresh_dir("hangup")));
  httplib::Client impatient("127.0.0.1", s.port);
  impatient.set_read_timeout(0, 20000);  // gives up after 20 ms, before the text stage is done
  EXPECT_FALSE(impatient.Post("/v1/videos/sync", video_json(4), "application/json"));
  auto c = s.client();
  nlohmann::json list;  // the server may read the request only after the client gave up
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do list = body_of(c.Get("/v1/videos"));
  while (list["data"].empty() && std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(list["data"].size(), 1u) << list.dump();
  const nlohmann::json job = wait_finished(c, list["data"][0]["id"]);
  EXPECT_EQ(job["status"], "completed") << job.dump();
  EXPECT_EQ(job["step"], 4);
  EXPECT_EQ(c.Get("/health")->status, 200);
}

TEST(ServeHttp, ImagesModelsHealthMetrics) {
  DATTN_SKIP_WITHOUT_FFMPEG();  // the images are PNG; without FFmpeg they are 501 (test_serve_formats.cc)
  RunningServer s(tiny_options(fresh_dir("images")));
  auto c = s.client();
  auto r = c.Post("/v1/images/generations",
                  R"({"prompt": "a lighthouse", "n": 2, "size": "64x32", "response_format": "b64_json",
                      "num_inference_steps": 1, "seed": 3})", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const nlohmann::json images = body_of(r);
  ASSERT_EQ(images["data"].size(), 2u);
  for (const auto& image : images["data"]) EXPECT_EQ(image["b64_json"].get<std::string>().substr(0, 8), "iVBORw0K");  // PNG
  EXPECT_NE(images["data"][0]["b64_json"], images["data"][1]["b64_json"]);  // seeds 3 and 4
  // The same request again: the same images (one frame each, PNG is lossless).
  r = c.Post("/v1/images/generations", R"({"prompt": "a lighthouse", "n": 2, "size": "64x32", "num_inference_steps": 1,
                                           "seed": 3})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_TRUE(body_of(r)["data"] == images["data"]);
  expect_error(c.Post("/v1/images/generations", R"({"prompt": "x", "response_format": "url"})", "application/json"),
               400, "b64_json", "response_format");
  expect_error(c.Post("/v1/images/generations", R"({"prompt": "x", "n": 99})", "application/json"), 400,
               "from 1 to 4", "n");

  const nlohmann::json models = body_of(c.Get("/v1/models"));
  ASSERT_EQ(models["data"].size(), 1u) << models.dump();
  EXPECT_EQ(models["data"][0]["id"], "wan-tiny");
  EXPECT_EQ(models["data"][0]["class_name"], "WanPipeline");
  EXPECT_EQ(models["data"][0]["video_format"], "mp4");
  EXPECT_EQ(models["data"][0]["video_content_type"], "video/mp4");
  EXPECT_EQ(models["data"][0]["quantization"], "none");
  ASSERT_FALSE(models["data"][0]["attention"].empty());
  EXPECT_FALSE(models["data"][0]["attention"][0]["backend"].get<std::string>().empty());

  EXPECT_EQ(c.Get("/health")->status, 200);
  const std::string metrics = c.Get("/metrics")->body;
  for (const char* line : {"dattn_queue_depth 0", "dattn_jobs{state=\"completed\"} 0", "dattn_step_seconds_count 4",
                           "dattn_stage_seconds_count{stage=\"denoising\"} 4", "dattn_http_responses_total{code=\"400\"} 2"})
    EXPECT_NE(metrics.find(line), std::string::npos) << line << "\n" << metrics;
}

TEST(ServeHttp, NotReadyUntilLoadedThenReady) {
  RunningServer s(tiny_options(fresh_dir("ready")), /*load=*/false);
  auto c = s.client();
  expect_error(c.Get("/health"), 503, "loading");
  expect_error(c.Post("/v1/videos", video_json(1), "application/json"), 503, "still loading");
  expect_error(c.Get("/v1/models"), 503, "still loading");
  s.server->load(load_tiny);
  EXPECT_EQ(c.Get("/health")->status, 200);
  EXPECT_EQ(c.Get("/v1/models")->status, 200);
  s.server->shutdown();
  httplib::Client late("127.0.0.1", s.port);
  EXPECT_FALSE(late.Get("/health"));  // no longer accepting
}

TEST(ServeHttp, ApiKeyGuardsV1) {
  auto options = tiny_options(fresh_dir("key"));
  options.api_key = "s3cret";
  RunningServer s(options);
  auto c = s.client();
  expect_error(c.Get("/v1/models"), 401, "API key");
  c.set_bearer_token_auth("wrong");
  expect_error(c.Get("/v1/models"), 401, "API key");
  c.set_bearer_token_auth("s3cret");
  EXPECT_EQ(c.Get("/v1/models")->status, 200);
  httplib::Client open("127.0.0.1", s.port);
  EXPECT_EQ(open.Get("/health")->status, 200);  // probes need no key
}

TEST(ServeHttp, UnknownIdsAndPathsAre404) {
  RunningServer s(tiny_options(fresh_dir("ids")));
  auto c = s.client();
  expect_error(c.Get("/v1/videos/video_0123456789abcdef0123456789abcdef"), 404, "no video");
  // Ids not of the server's form never reach the store or a path under --output-dir.
  for (const char* id : {"..%2F..%2Fjobs.sqlite", "video_..", "jobs", "VIDEO_0123456789ABCDEF0123456789ABCDEF"}) {
    expect_error(c.Get(std::string("/v1/videos/") + id + "/content"), 404, "");
    expect_error(c.Delete(std::string("/v1/videos/") + id), 404, "");
  }
  expect_error(c.Get("/v1/nothing"), 404, "no such route");
  expect_error(c.Get("/v1/videos/../../jobs.sqlite"), 404, "");
}

// httplib checked --max-body-bytes against Content-Length only and read a chunked body whole (200 MB of it
// raised the server to 1 GB); a Range header made it cut a 200 answer's body to the range.
TEST(ServeHttp, ChunkedBodiesAre411AndRangesGetTheWholeBody) {
  auto options = tiny_options(fresh_dir("chunked"));
  RunningServer s(options);
  auto c = s.client();
  const std::string body = video_json(1);
  auto r = c.Post("/v1/videos", [&](std::size_t offset, httplib::DataSink& sink) {
    if (offset == 0) sink.write(body.data(), body.size());
    else sink.done();
    return true;
  }, "application/json");
  // The answer comes before the body is read; a client still writing the body's last chunk may see its
  // connection go instead (httplib's client reports a write error), so only an answer is checked.
  if (r) expect_error(r, 411, "chunked request bodies are not accepted");
  EXPECT_TRUE(body_of(c.Get("/v1/videos"))["data"].empty());  // nothing was queued
  EXPECT_EQ(c.Get("/health")->status, 200);
  // Past 8 KiB a url-encoded form is refused by httplib's own cap, which the message now names.
  const std::string form = "prompt=" + std::string(9000, 'a');
  expect_error(c.Post("/v1/videos", form, "application/x-www-form-urlencoded"), 413, "limited to 8192 bytes");
  // A JSON listing asked for a range comes whole, with 200.
  r = c.Post("/v1/videos", body, "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  r = c.Get("/v1/videos", {{"Range", "bytes=0-9"}});
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Accept-Ranges"), "none");
  EXPECT_FALSE(nlohmann::json::parse(r->body, nullptr, false).is_discarded()) << r->body;
  r = c.Get("/v1/videos", {{"Range", "bytes=99999999-"}});
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Length"), std::to_string(r->body.size()));
}

// A known path asked with another method was 404 "no such route"; it is 405 with the methods it takes.
TEST(ServeHttp, AKnownPathWithAnotherMethodIs405WithAllow) {
  RunningServer s(tiny_options(fresh_dir("methods")));
  auto c = s.client();
  auto r = c.Put("/v1/videos", "{}", "application/json");
  expect_error(r, 405, "method PUT is not allowed on /v1/videos; it takes POST, GET, HEAD");
  EXPECT_EQ(r->get_header_value("Allow"), "POST, GET, HEAD");
  r = c.Get("/v1/images/generations");
  expect_error(r, 405, "it takes POST");
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  r = c.Post("/health", "", "text/plain");
  EXPECT_EQ(r->get_header_value("Allow"), "GET, HEAD");
  expect_error(r, 405, "method POST is not allowed on /health");
  r = c.Patch("/v1/videos/video_0123456789abcdef0123456789abcdef", "{}", "application/json");
  EXPECT_EQ(r->get_header_value("Allow"), "GET, HEAD, DELETE");
  expect_error(c.Put("/v1/nothing", "{}", "application/json"), 404, "no such route");
  // /v1/videos/sync is no video id.
  r = c.Get("/v1/videos/sync");
  expect_error(r, 405, "method GET is not allowed on /v1/videos/sync; it takes POST");
  expect_error(c.Delete("/v1/videos/sync"), 405, "it takes POST");
  expect_error(c.Get("/v1/videos/synchronous"), 404, "no video");
  // Counted under their status.
  EXPECT_NE(c.Get("/metrics")->body.find("dattn_http_responses_total{code=\"405\"} 6"), std::string::npos);
}

}  // namespace
}  // namespace dattn::testing
