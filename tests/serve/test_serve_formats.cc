// --video-format: a server that answers safetensors (the float frames `dattn generate --output
// x.safetensors` writes; what a build without FFmpeg serves), through real HTTP on loopback: sync and
// queued jobs, restart and deletion with files of either format, and the startup error of mp4 on a
// build without FFmpeg.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "cli/cli_runner.h"
#include "dattn/core/error.h"
#include "serve/serve_harness.h"

namespace dattn::testing {
namespace {

constexpr std::int64_t kFrames = 5, kHeight = 32, kWidth = 64;  // video_json's request

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `bytes` as a safetensors file, read here by its format's definition (an 8-byte little-endian header
// length, the JSON header, the data): one tensor "video", F32 [F,H,W,3], every value finite in [0,1].
void expect_video_frames(const std::string& bytes, std::int64_t frames, std::int64_t height, std::int64_t width) {
  ASSERT_GT(bytes.size(), 8u);
  std::uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  ASSERT_LE(8 + header_size, bytes.size());
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, header_size), nullptr, false);
  ASSERT_TRUE(header.is_object()) << bytes.substr(8, 200);
  ASSERT_TRUE(header.contains("video")) << header.dump();
  const nlohmann::json& video = header["video"];
  EXPECT_EQ(video["dtype"], "F32") << header.dump();
  EXPECT_EQ(video["shape"], nlohmann::json({frames, height, width, 3})) << header.dump();
  const std::size_t values = static_cast<std::size_t>(frames * height * width * 3);
  EXPECT_EQ(video["data_offsets"], nlohmann::json({0, values * 4})) << header.dump();
  ASSERT_EQ(bytes.size(), 8 + header_size + values * 4);
  const char* data = bytes.data() + 8 + header_size;
  for (std::size_t i = 0; i < values; ++i) {
    float v;
    std::memcpy(&v, data + 4 * i, 4);
    ASSERT_TRUE(v >= 0.0f && v <= 1.0f) << "value " << i << " is " << v;
  }
}

serve::ServeOptions safetensors_options(const std::string& dir) {
  serve::ServeOptions o = tiny_options(dir);
  o.video_format = VideoFormat::SAFETENSORS;
  return o;
}

std::set<std::string> files_in(const std::string& dir) {
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.insert(e.path().filename().string());
  return files;
}

TEST(ServeFormats, SafetensorsSyncAndQueuedAreWhatGenerateWrites) {
  const std::string dir = fresh_dir("safetensors");
  RunningServer s(safetensors_options(dir));
  auto c = s.client();
  const nlohmann::json card = body_of(c.Get("/v1/models"))["data"][0];
  EXPECT_EQ(card["video_format"], "safetensors") << card.dump();
  EXPECT_EQ(card["video_content_type"], "application/octet-stream") << card.dump();

  auto r = c.Post("/v1/videos/sync", video_json(2, 7), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/octet-stream");
  expect_video_frames(r->body, kFrames, kHeight, kWidth);
  const nlohmann::json stages = nlohmann::json::parse(r->get_header_value("X-Stage-Durations-Ms"));
  EXPECT_GT(stages.value("denoising", 0.0), 0.0) << stages.dump();
  EXPECT_GE(stages.value("writing", -1.0), 0.0) << stages.dump();  // the file, as generate's report has it
  const std::string sync_id = r->get_header_value("X-Video-Id");
  EXPECT_EQ(c.Get("/v1/videos/" + sync_id + "/content")->body, r->body);
  const std::string sync_video = r->body;

  // The same request queued: the same frames, under its own id, as ID.safetensors.
  r = c.Post("/v1/videos", video_json(2, 7), "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  const std::string id = body_of(r)["id"];
  ASSERT_EQ(wait_finished(c, id)["status"], "completed");
  const auto content = c.Get("/v1/videos/" + id + "/content");
  ASSERT_TRUE(content);
  EXPECT_EQ(content->status, 200);
  EXPECT_EQ(content->get_header_value("Content-Type"), "application/octet-stream");
  EXPECT_EQ(content->body, sync_video);
  EXPECT_EQ(files_in(dir + "/videos"), (std::set<std::string>{sync_id + ".safetensors", id + ".safetensors"}));

  // `dattn generate` of the same request writes the same file.
  const std::string generated = dir + "-generate.safetensors";
  const CliResult g = run_dattn("generate --model " + shell_quote(tiny_model()) +
                                    " --prompt 'a red fox' --width 64 --height 32 --num-frames 5"
                                    " --num-inference-steps 2 --seed 7 --device cpu --output " + shell_quote(generated),
                                "", "", 120);
  ASSERT_EQ(g.status, 0) << g.err;
  EXPECT_TRUE(read_bytes(generated) == sync_video) << "the server's safetensors differ from dattn generate's";

  // DELETE removes the record and the file.
  r = c.Delete("/v1/videos/" + id);
  ASSERT_TRUE(r);
  EXPECT_EQ(body_of(r)["deleted"], true) << r->body;
  EXPECT_EQ(files_in(dir + "/videos"), std::set<std::string>{sync_id + ".safetensors"});
}

TEST(ServeFormats, RestartKeepsSafetensorsJobsAndRemovesOrphans) {
  const std::string dir = fresh_dir("restart_formats");
  std::string id, video;
  {
    RunningServer a(safetensors_options(dir));
    auto c = a.client();
    const auto r = c.Post("/v1/videos/sync", video_json(1, 3), "application/json");
    ASSERT_TRUE(r && r->status == 200);
    id = r->get_header_value("X-Video-Id");
    video = r->body;
  }
  // Files that no completed job owns, in either format: removed at the next start.
  const std::string orphan = "video_0123456789abcdef0123456789abcdef";
  for (const std::string& name : {orphan + ".safetensors", orphan + ".mp4", std::string("notes.safetensors")})
    std::ofstream(dir + "/videos/" + name) << "x";
  {
    RunningServer b(safetensors_options(dir));
    auto c = b.client();
    EXPECT_EQ(body_of(c.Get("/v1/videos/" + id))["status"], "completed");
    const auto content = c.Get("/v1/videos/" + id + "/content");
    ASSERT_TRUE(content);
    EXPECT_EQ(content->body, video);
    EXPECT_EQ(content->get_header_value("Content-Type"), "application/octet-stream");
    EXPECT_EQ(files_in(dir + "/videos"), std::set<std::string>{id + ".safetensors"});
  }
#ifdef DATTN_WITH_FFMPEG
  // A server started with the other format serves the job as it was written, writes its own jobs in
  // its format, and deletes either.
  RunningServer m(tiny_options(dir));
  auto c = m.client();
  const auto content = c.Get("/v1/videos/" + id + "/content");
  ASSERT_TRUE(content);
  EXPECT_EQ(content->body, video);
  EXPECT_EQ(content->get_header_value("Content-Type"), "application/octet-stream");
  const auto r = c.Post("/v1/videos/sync", video_json(1, 3), "application/json");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "video/mp4");
  const std::string mp4_id = r->get_header_value("X-Video-Id");
  EXPECT_EQ(files_in(dir + "/videos"), (std::set<std::string>{id + ".safetensors", mp4_id + ".mp4"}));
  EXPECT_EQ(body_of(c.Delete("/v1/videos/" + id))["deleted"], true);
  EXPECT_EQ(files_in(dir + "/videos"), std::set<std::string>{mp4_id + ".mp4"});
#endif
}

TEST(ServeFormats, AFormatOtherThanMp4OrSafetensorsIsRefused) {
  const CliResult r = run_dattn("serve " + shell_quote(tiny_model()) + " --device cpu --port 0 --output-dir " +
                                    shell_quote(fresh_dir("png_format")) + " --video-format png",
                                "", "", 60);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--video-format 'png': expected mp4 or safetensors"), std::string::npos) << r.err;
}

// Without FFmpeg: mp4 (the default) stops the server at start with the fix in one line, and the images
// API, whose PNGs need FFmpeg too, answers 501 on a safetensors server.
TEST(ServeFormats, Mp4WithoutFFmpegFailsAtStartAndImagesAre501) {
#ifdef DATTN_WITH_FFMPEG
  GTEST_SKIP() << "this build has FFmpeg: mp4 is served (the other serve tests)";
#else
  const char* fix = "--video-format mp4 needs a build with FFmpeg (DATTN_VIDEO); use --video-format safetensors";
  const std::string dir = fresh_dir("no_ffmpeg");
  serve::ServeOptions options = tiny_options(dir);
  options.video_format = VideoFormat::MP4;
  serve::Server server(options);
  try {
    server.start();
    ADD_FAILURE() << "start() accepted mp4 in a build without FFmpeg";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), fix);
  }
  EXPECT_FALSE(std::filesystem::exists(dir)) << "refused before anything was created";
  for (const char* flag : {"", " --video-format mp4"}) {
    const CliResult r = run_dattn("serve " + shell_quote(tiny_model()) + " --device cpu --port 0 --output-dir " +
                                      shell_quote(dir) + flag,
                                  "", "", 60);
    EXPECT_EQ(r.status, 2) << flag;
    EXPECT_NE(r.err.find(fix), std::string::npos) << flag << ": " << r.err;
  }

  RunningServer s(safetensors_options(dir));
  auto c = s.client();
  const auto r = c.Post("/v1/images/generations", R"({"prompt": "a lighthouse", "size": "64x32"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 501) << r->body;
  EXPECT_NE(body_of(r)["error"]["message"].get<std::string>().find("cannot write .png images"), std::string::npos)
      << r->body;
#endif
}

}  // namespace
}  // namespace dattn::testing
