#pragma once
// The benchmarks' main: run, and print an exception as one "NAME: error: ..." line with exit status 1.
#include <cstdio>
#include <exception>

namespace dattn::bench {

inline int guarded_main(const char* name, int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace dattn::bench
