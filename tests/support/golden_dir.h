#pragma once
// Where the golden reference files are: $DATTN_GOLDEN_DIR when set (binaries built on one machine and
// run on another, e.g. the GPU machine), else the source tree's tests/golden compiled in.
#include <cstdlib>
#include <string>

namespace dattn::testing {

inline std::string golden_dir() {
  if (const char* dir = std::getenv("DATTN_GOLDEN_DIR"); dir && *dir) return dir;
  return DATTN_GOLDEN_DIR;
}

}  // namespace dattn::testing
