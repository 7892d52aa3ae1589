#pragma once
// The process's host memory as the kernel reports it.
#include <cstdint>

namespace dattn {

// The peak resident set (VmHWM in /proc/self/status) in bytes, or -1 where /proc is not there.
std::int64_t host_peak_rss_bytes();

// Host memory a new allocation can still get without swapping: MemAvailable in /proc/meminfo, in bytes;
// -1 where /proc is not there. What a request is checked against before any work on the CPU.
std::int64_t host_memory_available_bytes();

// Resets VmHWM to the current resident set ("5" to /proc/self/clear_refs, Linux >= 4.0); where that is
// refused the peak stays cumulative, still an upper bound.
void reset_host_peak_rss();

}  // namespace dattn
