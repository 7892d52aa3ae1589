// The serve layer's pieces without HTTP: the job store (transitions, pagination, what survives a
// reopen), the FIFO queue, job ids, base64, and the typed reading of request fields.
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "dattn/core/error.h"
#include "dattn/serve/api_error.h"
#include "dattn/serve/base64.h"
#include "dattn/serve/job_queue.h"
#include "dattn/serve/job_store.h"
#include "dattn/serve/printable.h"
#include "dattn/serve/rank_relay.h"
#include "dattn/serve/request_fields.h"
#include "serve/serve_harness.h"

namespace dattn::testing {
namespace {

using serve::JobRecord;
using serve::JobState;
using serve::JobStore;

JobRecord record(const std::string& id) {
  JobRecord j;
  j.id = id;
  j.created_at = 1700000000;
  j.request = {{"prompt", "p"}};
  j.total_steps = 3;
  return j;
}

TEST(ServeUnits, JobStoreTransitionsAndReopen) {
  const std::string dir = fresh_dir("store");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/jobs.sqlite";
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(serve::new_job_id());
  {
    JobStore store(path);
    for (const auto& id : ids) store.insert(record(id));
    EXPECT_TRUE(store.start(ids[0], 3));
    EXPECT_FALSE(store.start(ids[0], 3));  // only from queued
    store.set_progress(ids[0], 2);
    EXPECT_EQ(store.get(ids[0])->step, 2);
    EXPECT_TRUE(store.finish(ids[0], JobState::Completed, "", {{"stage_ms", {{"denoising", 1.5}}}}));
    EXPECT_TRUE(store.finish(ids[1], JobState::Cancelled, "by the client"));
    EXPECT_FALSE(store.finish(ids[1], JobState::Completed, ""));  // a cancelled job stays cancelled
    EXPECT_TRUE(store.start(ids[2], 3));
    EXPECT_FALSE(store.get("video_ffffffffffffffffffffffffffffffff"));
  }
  JobStore store(path);  // what a restarted server finds
  EXPECT_EQ(store.get(ids[0])->state, JobState::Completed);
  EXPECT_EQ(store.get(ids[0])->report["stage_ms"]["denoising"], 1.5);
  EXPECT_EQ(store.get(ids[1])->error, "by the client");
  const auto failed = store.fail_unfinished("restart");
  EXPECT_EQ(failed, (std::vector<std::string>{ids[2], ids[3]}));
  EXPECT_EQ(store.get(ids[2])->state, JobState::Failed);
  EXPECT_EQ(store.get(ids[3])->error, "restart");
  auto counts = store.count_by_state();
  EXPECT_EQ(counts[JobState::Failed], 2);
  EXPECT_EQ(counts[JobState::Completed], 1);

  auto page = store.list(3, "", false);
  ASSERT_EQ(page->jobs.size(), 3u);
  EXPECT_EQ(page->jobs[0].id, ids[3]);
  EXPECT_TRUE(page->has_more);
  page = store.list(3, page->jobs.back().id, false);
  ASSERT_EQ(page->jobs.size(), 1u);
  EXPECT_EQ(page->jobs[0].id, ids[0]);
  EXPECT_FALSE(page->has_more);
  EXPECT_FALSE(store.list(3, "video_ffffffffffffffffffffffffffffffff", true));
  store.remove(ids[0]);
  EXPECT_FALSE(store.get(ids[0]));
}

// The worker's failure path and shutdown record a job's end with finish_or_log: a store locked past its busy
// timeout (5 s) threw out of the worker thread and aborted the server with every queued job.
TEST(ServeUnits, FinishOrLogSurvivesALockedStore) {
  const std::string dir = fresh_dir("store_locked");
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/jobs.sqlite";
  JobStore store(path);
  const std::string id = serve::new_job_id();
  store.insert(record(id));
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);  // holds the write lock
  EXPECT_NO_THROW(store.finish_or_log(id, JobState::Failed, "x"));  // finish() itself throws here
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  store.finish_or_log(id, JobState::Failed, "recorded");  // the store works again once the lock goes
  EXPECT_EQ(store.get(id)->error, "recorded");
}

// A jobs.sqlite that is not a job store: an internal error (exit 1) at the first statement, or dattn's table
// written into another program's database. Refused naming the file and what is wrong, nothing written.
TEST(ServeUnits, AFileThatIsNoJobStoreIsRefusedNamingIt) {
  const std::string dir = fresh_dir("store_foreign");
  std::filesystem::create_directories(dir);
  const auto refused = [](const std::string& path, const std::string& part) {
    try {
      JobStore store(path);
      ADD_FAILURE() << path << " was opened as a job store";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("job store '" + path + "': " + part), std::string::npos) << e.what();
    }
  };
  const auto database = [&](const std::string& name, const char* sql) {
    const std::string path = dir + "/" + name;
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    return path;
  };
  const std::string text = dir + "/text.sqlite";
  {
    std::ofstream out(text, std::ios::binary);
    for (int i = 0; i < 200; ++i) out << "some text, not a database ";
  }
  refused(text, "not an SQLite database");
  refused(database("other.sqlite", "CREATE TABLE users (name TEXT); CREATE TABLE logs (line TEXT)"),
          "not a dattn job store (it holds the tables 'logs', 'users' and no 'jobs')");
  refused(database("jobs_of_another.sqlite", "CREATE TABLE jobs (id TEXT, command TEXT)"),
          "not a dattn job store (its table 'jobs' has no column 'seq')");
  // A store whose pages were overwritten after its header.
  const std::string damaged = dir + "/damaged.sqlite";
  {
    JobStore store(damaged);
    for (int i = 0; i < 300; ++i) store.insert(record(serve::new_job_id()));
  }
  {
    std::fstream f(damaged, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(4096 + 16);
    for (int i = 0; i < 3000; ++i) f.put(static_cast<char>(0xA5));
  }
  try {
    JobStore store(damaged);
    ADD_FAILURE() << "a damaged store was opened";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("job store '" + damaged + "': corrupt"), std::string::npos) << e.what();
  }
  // An empty file is a new store.
  std::ofstream(dir + "/empty.sqlite").close();
  EXPECT_NO_THROW(JobStore(dir + "/empty.sqlite"));
}

TEST(ServeUnits, PrintableEscapesControlCharacters) {
  EXPECT_EQ(serve::printable(std::string("a\0b\nc\r\td\x7f\x01 \xc3\xa9", 13)), "a\\u0000b\\nc\\r\\td\\u007f\\u0001 \xc3\xa9");
  EXPECT_EQ(serve::ApiError(400, std::string("x\0y", 3), "t").body()["error"]["message"], "x\\u0000y");
}

TEST(ServeUnits, DefaultsAboveTheLimitsAreRefusedNamingBothFlags) {
  serve::ServeLimits limits;
  serve::RequestDefaults defaults;
  EXPECT_NO_THROW(serve::check_defaults(limits, defaults));
  defaults.num_frames = 300;
  try {
    serve::check_defaults(limits, defaults);
    ADD_FAILURE() << "--default-num-frames 300 above --max-frames 241 was taken";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "--default-num-frames 300 is above --max-frames 241: every request leaving the field out "
                           "would be refused");
  }
}

TEST(ServeUnits, QueueRunsInArrivalOrderOneAtATimeAndIsBounded) {
  std::mutex mutex;
  std::vector<std::string> order;
  int running = 0, most = 0;
  std::mutex gate;
  gate.lock();  // the first job holds the worker until the others are queued
  serve::JobQueue queue(2, [&](serve::Job& job) {
    {
      std::lock_guard lock(mutex);
      most = std::max(most, ++running);
    }
    if (job.id == "a") std::lock_guard hold(gate);
    {
      std::lock_guard lock(mutex);
      order.push_back(job.id);
      --running;
    }
    job.state = JobState::Completed;
    job.done();
  });
  std::vector<std::shared_ptr<serve::Job>> jobs;
  for (const char* id : {"a", "b", "c", "d"}) {
    jobs.push_back(std::make_shared<serve::Job>());
    jobs.back()->id = id;
  }
  ASSERT_TRUE(queue.push(jobs[0]));
  while (!queue.busy()) std::this_thread::yield();
  EXPECT_TRUE(queue.push(jobs[1]));
  EXPECT_TRUE(queue.push(jobs[2]));
  EXPECT_FALSE(queue.push(jobs[3]));  // two wait already
  EXPECT_EQ(queue.waiting(), 2u);
  EXPECT_EQ(queue.take_waiting("b"), jobs[1]);
  EXPECT_TRUE(queue.push(jobs[3]));
  EXPECT_TRUE(queue.cancel_running("a"));
  EXPECT_TRUE(jobs[0]->cancel);
  EXPECT_FALSE(queue.cancel_running("c"));
  gate.unlock();
  jobs[3]->wait();
  EXPECT_EQ(order, (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_EQ(most, 1);
  EXPECT_TRUE(queue.stop().empty());
  EXPECT_FALSE(queue.push(jobs[1]));  // stopped
}

TEST(ServeUnits, IdsAndBase64) {
  const std::string id = serve::new_job_id();
  EXPECT_TRUE(serve::valid_job_id(id)) << id;
  EXPECT_NE(id, serve::new_job_id());
  for (const char* bad : {"", "video_", "video_../../../etc/passwd", "video_0123456789abcdef0123456789abcde/",
                          "video_0123456789ABCDEF0123456789abcdef", "xvideo_0123456789abcdef0123456789abcde"})
    EXPECT_FALSE(serve::valid_job_id(bad)) << bad;
  EXPECT_EQ(serve::base64_encode(""), "");
  EXPECT_EQ(serve::base64_encode("f"), "Zg==");
  EXPECT_EQ(serve::base64_encode("fo"), "Zm8=");
  EXPECT_EQ(serve::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(serve::base64_encode(std::string("\xff\x00\x80", 3)), "/wCA");
}

TEST(ServeUnits, FieldsReadFormsAndJsonAlike) {
  const auto form = serve::RequestFields::from_form({{"width", "64"}, {"seed", "18446744073709551615"}, {"g", "2.5"}});
  EXPECT_EQ(form.integer("width", 1, 100), 64);
  EXPECT_EQ(form.whole("seed"), 18446744073709551615ull);
  EXPECT_EQ(form.number("g"), 2.5);
  EXPECT_FALSE(form.integer("height", 1, 100));
  const auto json = serve::RequestFields::from_json(R"({"width": 64, "seed": 18446744073709551615, "g": 2.5, "n": null})");
  EXPECT_EQ(json.integer("width", 1, 100), 64);
  EXPECT_EQ(json.whole("seed"), 18446744073709551615ull);
  EXPECT_FALSE(json.has("n"));  // null is absent, as OpenAI's clients send unset fields
  const auto refused = [](auto read) {
    try {
      read();
    } catch (const serve::ApiError& e) {
      return e.status() == 400;
    }
    return false;
  };
  EXPECT_TRUE(refused([&] { form.integer("width", 1, 10); }));
  EXPECT_TRUE(refused([] { serve::RequestFields::from_form({{"w", " 64"}}).integer("w", 1, 100); }));
  EXPECT_TRUE(refused([] { serve::RequestFields::from_form({{"w", "0x40"}}).integer("w", 1, 100); }));
  EXPECT_TRUE(refused([] { serve::RequestFields::from_form({{"g", "nan"}}).number("g"); }));
  EXPECT_TRUE(refused([] { serve::RequestFields::from_form({{"s", "18446744073709551616"}}).whole("s"); }));
  EXPECT_TRUE(refused([] { serve::RequestFields::from_form({{"a", "1"}, {"a", "2"}}); }));
  EXPECT_TRUE(refused([] { serve::RequestFields::from_json(R"({"w": true})").integer("w", 1, 100); }));
  // A JSON 0 is read as unsigned; it was checked against the maximum only ("fps": 0 ran, then failed).
  EXPECT_TRUE(refused([] { serve::RequestFields::from_json(R"({"w": 0})").integer("w", 1, 100); }));
  EXPECT_TRUE(refused([] { serve::RequestFields::from_json(R"({"w": 4})").integer("w", 5, 100); }));
  EXPECT_EQ(serve::RequestFields::from_json(R"({"w": 0})").integer("w", 0, 100), 0);
  EXPECT_TRUE(refused([] { serve::RequestFields::from_json(R"({"x": 1})").allow_only({"prompt"}); }));
}

}  // namespace
}  // namespace dattn::testing

namespace dattn::testing {
namespace {

// What rank 0 sends the other ranks of a multi-rank server: every field comes back as it was.
TEST(RankRelay, RequestsComeBackFieldForField) {
  GenerationRequest a;
  a.prompt = "un renard roux \xC3\xA9 \"quoted\"\n";
  a.negative_prompt = "blurry";
  a.height = 704;
  a.width = 1280;
  a.num_frames = 121;
  a.num_inference_steps = 50;
  a.guidance_scale = 5.000000000000001;  // doubles to the last bit
  a.seed = 18446744073709551615ull;      // the whole 64 bits
  a.flow_shift = 1.0 / 3.0;
  a.max_sequence_length = 226;
  GenerationRequest b = serve::decode_request(serve::encode_request(a));
  EXPECT_EQ(b.prompt, a.prompt);
  EXPECT_EQ(b.negative_prompt, a.negative_prompt);
  EXPECT_EQ(b.height, a.height);
  EXPECT_EQ(b.width, a.width);
  EXPECT_EQ(b.num_frames, a.num_frames);
  EXPECT_EQ(b.num_inference_steps, a.num_inference_steps);
  EXPECT_EQ(b.guidance_scale, a.guidance_scale);
  EXPECT_EQ(b.seed, a.seed);
  EXPECT_EQ(b.flow_shift, a.flow_shift);
  EXPECT_EQ(b.max_sequence_length, a.max_sequence_length);

  // Fields not given stay not given (the model's defaults apply on every rank alike).
  GenerationRequest c;
  c.prompt = "p";
  const GenerationRequest d = serve::decode_request(serve::encode_request(c));
  EXPECT_FALSE(d.guidance_scale || d.flow_shift || d.max_sequence_length);
  EXPECT_FALSE(d.initial_latents.defined());

  c.initial_latents = Tensor::zeros({1, 1, 1, 1, 1}, DType::F32);
  EXPECT_THROW(serve::encode_request(c), std::invalid_argument);  // never sent: a server takes none
  EXPECT_THROW(serve::decode_request("{\"prompt\": 1}"), std::invalid_argument);
  EXPECT_THROW(serve::decode_request("not json"), std::invalid_argument);
}

}  // namespace
}  // namespace dattn::testing
