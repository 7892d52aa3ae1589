// Sizes that come from outside (shapes, counts) are overflow-checked, and readers refuse paths that
// are not regular files before opening them (a FIFO would block open() forever).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

#include "dattn/core/checked_math.h"
#include "dattn/core/error.h"
#include "dattn/core/files.h"
#include "dattn/core/human_bytes.h"
#include "dattn/core/process_memory.h"
#include "dattn/core/tensor.h"

namespace dattn {
namespace {

namespace fs = std::filesystem;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::string user_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckedMath, MultiplyAndAddRefuseOverflowNamingTheValues) {
  EXPECT_EQ(checked_mul(1 << 20, 1 << 20, "x"), std::int64_t{1} << 40);
  EXPECT_EQ(checked_add(kMax - 1, 1, "x"), kMax);
  const std::string m = user_error([] { checked_mul(std::int64_t{1} << 32, std::int64_t{1} << 32, "frame size"); });
  EXPECT_NE(m.find("frame size: 4294967296 x 4294967296 overflows"), std::string::npos) << m;
  EXPECT_NE(user_error([] { checked_add(kMax, 1, "bytes"); }).find("bytes: "), std::string::npos);
}

TEST(CheckedMath, ProductOfDimensions) {
  EXPECT_EQ(product_if_fits({2, 3, 4}), 24);
  EXPECT_EQ(product_if_fits({}), 1);
  EXPECT_FALSE(product_if_fits({65536, 65536, 65536, 65536, 65536}).has_value());
  EXPECT_EQ(product_if_fits({65536, 65536, 65536, 65536, 0}), 0);  // zero wins, even after an overflow
}

TEST(CheckedMath, TensorShapesThatOverflowAreUserErrorsNotWrappedSizes) {
  const Shape huge{65536, 65536, 65536, 65536, 65536};
  EXPECT_NE(user_error([&] { shape_numel(huge); }).find("has more than 2^63 elements"), std::string::npos);
  EXPECT_NE(user_error([&] { Tensor::empty(huge, DType::F32); }).find("[65536,65536,65536,65536,65536]"),
            std::string::npos);
  // numel fits, bytes do not: 2^62 fp32 elements.
  EXPECT_NE(user_error([] { Tensor::empty({std::int64_t{1} << 31, std::int64_t{1} << 31}, DType::F32); })
                .find("more than 2^63 bytes"),
            std::string::npos);
}

TEST(CheckedMath, AHostAllocationThatCannotBeMetIsAUserError) {
  // 2^61 bytes fit the arithmetic but no machine: an error with the size, not std::bad_alloc.
  const std::string m = user_error([] { Tensor::empty({std::int64_t{1} << 59}, DType::F32); });
  EXPECT_NE(m.find("out of host memory"), std::string::npos) << m;
  EXPECT_NE(m.find("2097152.0 TiB"), std::string::npos) << m;
}

TEST(Files, RegularFilesPassAndEverythingElseIsNamed) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("dattn_files_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string file = (dir / "weights.safetensors").string(), fifo = (dir / "fifo").string();
  std::ofstream(file) << "x";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NO_THROW(require_regular_file(file, "weights"));
  EXPECT_EQ(user_error([&] { require_regular_file(fifo, "weights"); }),
            "weights '" + fifo + "' is a FIFO (named pipe), not a regular file");
  EXPECT_EQ(user_error([&] { require_regular_file(dir.string(), "config"); }),
            "config '" + dir.string() + "' is a directory, not a regular file");
  EXPECT_EQ(user_error([&] { require_regular_file((dir / "nope").string(), "config"); }),
            "config '" + (dir / "nope").string() + "': does not exist");
  EXPECT_NE(user_error([] { require_regular_file("/dev/null", "config"); }).find("character device"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Files, FreeDiskAndAvailableMemoryAreKnownHere) {
  EXPECT_GT(free_disk_bytes(::testing::TempDir()), 0);
  EXPECT_EQ(free_disk_bytes("/no/such/dir/at/all"), -1);
  EXPECT_GT(host_memory_available_bytes(), 0);
  EXPECT_EQ(human_bytes(42), "42 bytes");
  EXPECT_EQ(human_bytes(std::int64_t{3} << 29), "1.5 GiB");
  EXPECT_EQ(human_bytes(std::int64_t{2} << 40), "2.0 TiB");
}

}  // namespace
}  // namespace dattn
