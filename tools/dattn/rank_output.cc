// Output of the ranks (see rank_output.h).
#include "dattn/rank_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace dattn::tool {
namespace {

// The process's own terminal state: which rank it is and where its errors go.
struct RankOutput {
  int rank = 0;
  std::FILE* errors = nullptr;
};

RankOutput& state() {
  static RankOutput s;
  return s;
}

}  // namespace

void quiet_other_ranks(int rank) {
  RankOutput& s = state();
  if (rank == 0 || s.errors != nullptr) return;
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  const int null = open("/dev/null", O_WRONLY);
  if (saved < 0 || null < 0) return;  // keep printing rather than lose the errors
  s.errors = fdopen(saved, "w");
  if (s.errors == nullptr) return;
  s.rank = rank;
  dup2(null, STDOUT_FILENO);
  dup2(null, STDERR_FILENO);
  close(null);
}

std::FILE* error_stream() { return state().errors ? state().errors : stderr; }

std::string error_prefix() {
  return state().rank == 0 ? std::string("dattn: ") : "dattn: rank " + std::to_string(state().rank) + ": ";
}

}  // namespace dattn::tool
