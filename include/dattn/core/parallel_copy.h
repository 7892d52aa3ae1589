#pragma once
// A host memcpy spread over the OpenMP threads: one thread copying from a freshly mapped file runs far
// below the memory bandwidth (page faults, one core's load/store rate), and weight loading copies
// gigabytes that way.
#include <cstddef>

namespace dattn {

// Copies n bytes from src to dst (not overlapping), split into blocks over the OpenMP threads when n is
// large enough to pay for it; a plain memcpy otherwise.
void parallel_copy(void* dst, const void* src, std::size_t n);

}  // namespace dattn
