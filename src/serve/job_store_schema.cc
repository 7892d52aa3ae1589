#include "serve/job_store_schema.h"

#include <sqlite3.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dattn/core/error.h"

namespace dattn::serve {
namespace {

constexpr const char* kAdvice = "; move it away (a new store is then created) or give another --output-dir";
// Every column JobStore reads or writes.
constexpr const char* kColumns[] = {"seq", "id", "state", "created_at", "completed_at", "request", "error",
                                    "step", "total_steps", "report"};

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  throw UserError("job store '" + path + "': " + what + kAdvice);
}

// The first column of every row of `sql`; a failure is named as SQLite sees the file.
std::vector<std::string> column(sqlite3* db, const std::string& path, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  std::vector<std::string> out;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc == SQLITE_OK)
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      const auto* text = sqlite3_column_text(stmt, 0);
      out.emplace_back(text ? reinterpret_cast<const char*>(text) : "");
    }
  const std::string why = sqlite3_errmsg(db);
  sqlite3_finalize(stmt);
  if (rc == SQLITE_DONE) return out;
  const int code = rc & 0xff;
  if (code == SQLITE_NOTADB) refuse(path, "not an SQLite database (a damaged store, or another kind of file)");
  if (code == SQLITE_CORRUPT) refuse(path, "corrupt (SQLite: " + why + ")");
  throw UserError("job store '" + path + "': cannot read it: " + why);
}

}  // namespace

void check_job_store_file(sqlite3* db, const std::string& path) {
  const std::vector<std::string> tables =
      column(db, path, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name");
  if (tables.empty()) return;  // a new store
  if (std::find(tables.begin(), tables.end(), "jobs") == tables.end()) {
    std::string list;
    for (const std::string& t : tables) list += (list.empty() ? "'" : ", '") + t + "'";
    refuse(path, "not a dattn job store (it holds the tables " + list + " and no 'jobs')");
  }
  const std::vector<std::string> columns = column(db, path, "SELECT name FROM pragma_table_info('jobs')");
  for (const char* c : kColumns)
    if (std::find(columns.begin(), columns.end(), c) == columns.end())
      refuse(path, std::string("not a dattn job store (its table 'jobs' has no column '") + c + "')");
  // A store holds one row per job: reading it whole at start is cheap, and finds a damaged page now rather
  // than at some request later.
  const std::vector<std::string> check = column(db, path, "PRAGMA quick_check(1)");
  if (check.empty() || check.front() != "ok") {
    std::string what = check.empty() ? std::string("no answer") : check.front();
    for (char& c : what)
      if (c == '\n' || c == '\r') c = ' ';  // SQLite's report spans lines; the error is one
    refuse(path, "corrupt (SQLite's quick_check: " + what + ")");
  }
}

}  // namespace dattn::serve
