#include "dattn/serve/job_store.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <utility>

#include "dattn/core/error.h"
#include "serve/job_store_schema.h"

namespace dattn::serve {
namespace {

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One prepared statement; binds by position (1-based) and steps to the end or row by row.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) fail("prepare");
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  bool row() {  // true while a row is available
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) fail("step");
    return false;
  }
  void run() {
    while (row()) {
    }
  }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col)) : std::string();
  }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  int changes() const { return sqlite3_changes(db_); }

 private:
  [[noreturn]] void fail(const char* what) const {
    throw std::runtime_error(std::string("job store: ") + what + ": " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// A prompt need not be valid UTF-8 (a form field is bytes); what is kept shows U+FFFD in its place.
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

constexpr const char* kColumns = "id, state, created_at, completed_at, request, error, step, total_steps, report";

JobRecord read_row(const Statement& s) {
  JobRecord j;
  j.id = s.text(0);
  j.state = parse_state(s.text(1)).value_or(JobState::Failed);
  j.created_at = s.integer(2);
  j.completed_at = s.integer(3);
  j.request = nlohmann::json::parse(s.text(4), nullptr, false);
  j.error = s.text(5);
  j.step = static_cast<int>(s.integer(6));
  j.total_steps = static_cast<int>(s.integer(7));
  const std::string report = s.text(8);
  if (!report.empty()) j.report = nlohmann::json::parse(report, nullptr, false);
  return j;
}

}  // namespace

JobStore::JobStore(const std::string& path) {
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw UserError("job store '" + path + "': cannot open: " + why);
  }
  sqlite3_busy_timeout(db_, 5000);
  try {
    check_job_store_file(db_, path);  // a foreign or damaged file is refused before anything is written
    // WAL: a committed transition survives kill -9; synchronous=NORMAL is durable against a process
    // crash (not a power cut), which keeps the per-step progress update cheap.
    exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    // seq orders jobs created within the same second.
    exec("CREATE TABLE IF NOT EXISTS jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, "
         "state TEXT NOT NULL, created_at INTEGER NOT NULL, completed_at INTEGER NOT NULL DEFAULT 0, "
         "request TEXT NOT NULL, error TEXT NOT NULL DEFAULT '', step INTEGER NOT NULL DEFAULT 0, "
         "total_steps INTEGER NOT NULL DEFAULT 0, report TEXT NOT NULL DEFAULT '')");
  } catch (const UserError&) {
    sqlite3_close(db_);
    throw;
  } catch (const std::exception& e) {  // read-only, disk full: the user's to fix, named by the file
    sqlite3_close(db_);
    std::string why = e.what();
    if (why.rfind("job store: ", 0) == 0) why.erase(0, 11);
    throw UserError("job store '" + path + "': cannot set it up: " + why);
  }
}

JobStore::~JobStore() { sqlite3_close(db_); }

void JobStore::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error("job store: " + why);
  }
}

void JobStore::insert(const JobRecord& job) {
  std::lock_guard lock(mutex_);
  Statement(db_, "INSERT INTO jobs (id, state, created_at, request, total_steps) VALUES (?, ?, ?, ?, ?)")
      .bind(1, job.id).bind(2, state_name(job.state)).bind(3, job.created_at).bind(4, dump(job.request))
      .bind(5, std::int64_t{job.total_steps}).run();
}

std::optional<JobRecord> JobStore::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  Statement s(db_, (std::string("SELECT ") + kColumns + " FROM jobs WHERE id = ?").c_str());
  s.bind(1, id);
  if (!s.row()) return std::nullopt;
  return read_row(s);
}

std::optional<JobStore::Page> JobStore::list(int limit, const std::string& after, bool ascending) {
  std::lock_guard lock(mutex_);
  std::int64_t from = ascending ? 0 : std::numeric_limits<std::int64_t>::max();
  if (!after.empty()) {
    Statement s(db_, "SELECT seq FROM jobs WHERE id = ?");
    s.bind(1, after);
    if (!s.row()) return std::nullopt;
    from = s.integer(0);
  }
  const std::string sql = std::string("SELECT ") + kColumns + " FROM jobs WHERE seq " + (ascending ? ">" : "<") +
                          " ? ORDER BY seq " + (ascending ? "ASC" : "DESC") + " LIMIT ?";
  Statement s(db_, sql.c_str());
  s.bind(1, from).bind(2, std::int64_t{limit} + 1);  // one more says whether there is a next page
  Page page;
  while (s.row()) page.jobs.push_back(read_row(s));
  if (static_cast<int>(page.jobs.size()) > limit) {
    page.jobs.pop_back();
    page.has_more = true;
  }
  return page;
}

bool JobStore::start(const std::string& id, int total_steps) {
  std::lock_guard lock(mutex_);
  Statement s(db_, "UPDATE jobs SET state = 'in_progress', step = 0, total_steps = ? WHERE id = ? AND state = 'queued'");
  s.bind(1, std::int64_t{total_steps}).bind(2, id).run();
  return s.changes() > 0;
}

void JobStore::set_progress(const std::string& id, int step) {
  std::lock_guard lock(mutex_);
  Statement(db_, "UPDATE jobs SET step = ? WHERE id = ? AND state = 'in_progress'").bind(1, std::int64_t{step}).bind(2, id).run();
}

void JobStore::finish_or_log(const std::string& id, JobState to, const std::string& error) noexcept {
  try {
    finish(id, to, error);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[dattn serve] job %s: could not record it as %s in the job store: %s\n", id.c_str(),
                 state_name(to), e.what());
  }
}

bool JobStore::finish(const std::string& id, JobState to, const std::string& error, const nlohmann::json& report) {
  std::lock_guard lock(mutex_);
  Statement s(db_, "UPDATE jobs SET state = ?, error = ?, report = ?, completed_at = ? "
                   "WHERE id = ? AND state IN ('queued', 'in_progress')");
  s.bind(1, state_name(to)).bind(2, error).bind(3, report.is_null() ? std::string() : dump(report))
      .bind(4, now_seconds()).bind(5, id).run();
  return s.changes() > 0;
}

void JobStore::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  Statement(db_, "DELETE FROM jobs WHERE id = ?").bind(1, id).run();
}

std::vector<std::string> JobStore::fail_unfinished(const std::string& reason) {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mutex_);
    Statement s(db_, "SELECT id FROM jobs WHERE state IN ('queued', 'in_progress')");
    while (s.row()) ids.push_back(s.text(0));
  }
  for (const std::string& id : ids) finish(id, JobState::Failed, reason);
  return ids;
}

std::map<JobState, std::int64_t> JobStore::count_by_state() {
  std::lock_guard lock(mutex_);
  std::map<JobState, std::int64_t> counts;
  Statement s(db_, "SELECT state, COUNT(*) FROM jobs GROUP BY state");
  while (s.row())
    if (const auto st = parse_state(s.text(0))) counts[*st] = s.integer(1);
  return counts;
}

}  // namespace dattn::serve
