#pragma once
// A host memcpy spread over the OpenMP threads: one thread copying from a freshly mapped file runs far
// below the memory bandwidth (page faults, one core's load/store rate), and weight loading copies
// gigabytes that way.
#include <cstddef>
#include <cstdint>

namespace dattn {

// Copies n bytes from src to dst (not overlapping), split into blocks over the OpenMP threads when n is
// large enough to pay for it; a plain memcpy otherwise.
void parallel_copy(void* dst, const void* src, std::size_t n);

// Reads n bytes at `offset` of the open file `fd` into dst with pread, split into blocks over the OpenMP
// threads as parallel_copy is. No mapping is touched, so no page faults: from the page cache each block
// is one copy in the kernel. Throws UserError naming `what` (the file), the offset and the reason when the
// file ends early or a read fails.
void parallel_read(void* dst, int fd, std::uint64_t offset, std::size_t n, const char* what);

}  // namespace dattn
