#pragma once
// Whether the SQLite file a JobStore opens is one: empty (a new store), or a dattn job store whose jobs table
// has every column the store reads, and not corrupt. Checked before anything is written to it, so that a
// foreign or damaged jobs.sqlite stops `dattn serve` with one line naming the file instead of an internal
// error at the first statement (or dattn's table written into another program's database).
#include <string>

struct sqlite3;

namespace dattn::serve {

// UserError "job store 'PATH': ..." saying what is wrong.
void check_job_store_file(sqlite3* db, const std::string& path);

}  // namespace dattn::serve
