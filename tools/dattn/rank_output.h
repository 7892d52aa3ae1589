#pragma once
// What each rank of a multi-rank run prints: rank 0 the progress, logs, summary and errors; the other
// ranks only their errors, prefixed with their rank (they run the same steps, so their progress and
// logs would repeat rank 0's lines).
#include <cstdio>
#include <string>

namespace dattn::tool {

// On a rank other than 0: stdout and stderr go to /dev/null from here on; error_stream() keeps the
// original stderr. A no-op on rank 0.
void quiet_other_ranks(int rank);
// Where main prints errors, and the "dattn: " / "dattn: rank 1: " prefix of its lines.
std::FILE* error_stream();
std::string error_prefix();

}  // namespace dattn::tool
