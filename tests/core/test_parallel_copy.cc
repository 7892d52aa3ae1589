// parallel_copy and parallel_read: every byte copied, whatever the size (below the threshold, exact
// blocks, a ragged last block) and offset, and nothing written past the end; a read past the file's end
// is an error naming the file and the offset.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/core/parallel_copy.h"

namespace dattn {
namespace {

TEST(ParallelCopy, CopiesEveryByteAndNoMore) {
  std::mt19937_64 rng(1);
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, 4 * kMiB - 1, 4 * kMiB, 5 * kMiB + 3,
                        17 * kMiB}) {
    std::vector<std::uint8_t> src(n), dst(n + 64, 0xA5);
    for (auto& b : src) b = static_cast<std::uint8_t>(rng());
    parallel_copy(dst.data(), src.data(), n);
    EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin())) << n << " bytes";
    for (std::size_t i = n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xA5) << "byte " << i << " past " << n;
  }
}

TEST(ParallelRead, ReadsEveryByteAtAnyOffsetAndNoMore) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  std::mt19937_64 rng(2);
  std::vector<std::uint8_t> file(17 * kMiB + 5);
  for (auto& b : file) b = static_cast<std::uint8_t>(rng());
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("dattn_parallel_read_" + std::to_string(::getpid()) + ".bin")).string();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  for (const auto& [offset, n] : std::vector<std::pair<std::size_t, std::size_t>>{
           {0, 0}, {3, 1}, {7, 4 * kMiB - 1}, {0, 4 * kMiB}, {kMiB + 1, 5 * kMiB + 3}, {5, 17 * kMiB}, {0, file.size()}}) {
    std::vector<std::uint8_t> dst(n + 64, 0xA5);
    parallel_read(dst.data(), fd, offset, n, "test file");
    EXPECT_TRUE(std::equal(dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(n), file.begin() + static_cast<std::ptrdiff_t>(offset)))
        << n << " bytes at " << offset;
    for (std::size_t i = n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xA5) << "byte " << i << " past " << n;
  }
  std::vector<std::uint8_t> dst(8 * kMiB);
  for (const std::size_t offset : {file.size() - 3, file.size() - 6 * kMiB}) {
    try {
      parallel_read(dst.data(), fd, offset, dst.size(), "weights.safetensors");
      FAIL() << "read past the end at " << offset;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), "weights.safetensors: cannot read " + std::to_string(dst.size()) + " bytes at offset " +
                                           std::to_string(offset) + ": the file ends before them");
    }
  }
  ::close(fd);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dattn
