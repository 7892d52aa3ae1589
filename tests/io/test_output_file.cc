// Output files: folders made as `mkdir -p`, paths checked up front, and every writer (safetensors, mp4,
// png) replacing an existing file whole: a hard link to the old file keeps the old bytes (a writer that
// truncated and rewrote in place would change them), and a failed write leaves the old file as it was.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "dattn/core/error.h"
#include "support/config_error.h"
#include "dattn/core/tensor.h"
#include "dattn/io/output_file.h"
#include "dattn/io/safetensors.h"
#include "dattn/io/safetensors_writer.h"
#include "dattn/io/video_writer.h"
#include "support/feature_skip.h"

namespace fs = std::filesystem;
using namespace dattn;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("dattn_out_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Everything in the folder but `keep`: what a writer left behind.
  std::vector<std::string> leftovers(const std::vector<std::string>& keep) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (std::find(keep.begin(), keep.end(), name) == keep.end()) out.push_back(name);
    }
    return out;
  }
  // An existing file `name` with known bytes, and a hard link to it that shows what happens to them.
  void existing(const std::string& name) {
    std::ofstream(path(name), std::ios::binary) << "old bytes";
    fs::create_hard_link(path(name), path(name + ".link"));
  }

  fs::path dir_;
};

Tensor frames(std::int64_t f, std::int64_t h, std::int64_t w) {
  std::vector<double> v(static_cast<std::size_t>(f * h * w * 3));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 7) / 6.0;
  return Tensor::from_f64(v, {f, h, w, 3}, DType::F32);
}

TEST_F(OutputFileTest, ParentFoldersAreMadeAsMkdirP) {
  create_parent_folders(path("a/b/c/out.mp4"), "output");
  EXPECT_TRUE(fs::is_directory(dir_ / "a" / "b" / "c"));
  EXPECT_TRUE(fs::is_empty(dir_ / "a" / "b" / "c"));
  create_parent_folders(path("a/b/c/out.mp4"), "output");  // already there: nothing to do
  create_parent_folders("relative.json", "--report");      // the current folder
  std::ofstream(path("file")) << "x";
  const std::string e = user_error([&] { create_parent_folders(path("file/sub/out.json"), "--report"); });
  EXPECT_NE(e.find("--report '" + path("file/sub/out.json") + "': cannot create folder '" + path("file/sub") + "'"),
            std::string::npos)
      << e;
}

TEST_F(OutputFileTest, PathsAreCheckedBeforeAnyWork) {
  EXPECT_NE(user_error([&] { check_output_file(path("missing/r.json"), "--report"); })
                .find("--report '" + path("missing/r.json") + "': folder '" + path("missing") + "' does not exist"),
            std::string::npos);
  fs::create_directories(path("folder.json"));
  EXPECT_NE(user_error([&] { check_output_file(path("folder.json"), "--report"); })
                .find("--report '" + path("folder.json") + "' is a folder, expected a file name"),
            std::string::npos);
  EXPECT_NO_THROW(check_output_file(path("r.json"), "--report"));
  EXPECT_EQ(leftovers({"folder.json"}), std::vector<std::string>{});  // the probe is gone
}

TEST_F(OutputFileTest, PendingFileReplacesOnlyOnCommit) {
  existing("out.json");
  std::string temp;
  {
    PendingFile file(path("out.json"));
    temp = file.temp();
    EXPECT_EQ(fs::path(temp).parent_path(), dir_);  // same folder: the rename cannot cross file systems
    EXPECT_EQ(fs::path(temp).filename().string().front(), '.');
    EXPECT_EQ(fs::path(temp).extension(), ".json");
    std::ofstream(temp) << "half a fi";
    // A writer that throws here never commits.
  }
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_EQ(read(path("out.json")), "old bytes");
  EXPECT_EQ(leftovers({"out.json", "out.json.link"}), std::vector<std::string>{});

  fs::permissions(path("out.json"), fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write_file_replacing(path("out.json"), [](const std::string& t) { std::ofstream(t) << "new bytes"; });
  EXPECT_EQ(read(path("out.json")), "new bytes");
  EXPECT_EQ(read(path("out.json.link")), "old bytes");  // a new file, not the old one rewritten
  EXPECT_EQ(fs::status(path("out.json")).permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_EQ(leftovers({"out.json", "out.json.link"}), std::vector<std::string>{});

  // A writer that wrote nothing: the target stays.
  EXPECT_NE(user_error([&] { write_file_replacing(path("out.json"), [](const std::string&) {}); })
                .find("the writer produced no file"),
            std::string::npos);
  EXPECT_EQ(read(path("out.json")), "new bytes");
}

// A rename replaced a FIFO (or, as root, /dev/null) with a regular file. Every writer commits through
// PendingFile, which renames over nothing but a regular file; a symlink's target is replaced instead.
TEST_F(OutputFileTest, OnlyARegularFileIsRenamedOver) {
  ASSERT_EQ(::mkfifo(path("f.safetensors").c_str(), 0600), 0);
  EXPECT_NE(user_error([&] { check_output_file(path("f.safetensors"), "--output"); }).find("is a FIFO (named pipe)"),
            std::string::npos);
  EXPECT_NE(user_error([&] { write_safetensors(path("f.safetensors"), {{"x", "U8", {1}, {1}}}); })
                .find("not a regular file"),
            std::string::npos);
  EXPECT_TRUE(fs::is_fifo(path("f.safetensors")));
  EXPECT_EQ(output_place(path("f.safetensors"), "--report", /*stream_ok=*/true), OutputPlace::Stream);
  EXPECT_EQ(output_place("/dev/null", "--report", /*stream_ok=*/true), OutputPlace::Stream);
  EXPECT_NE(user_error([&] { output_place("/dev/null", "--output", /*stream_ok=*/false); }).find("character device"),
            std::string::npos);
  EXPECT_EQ(leftovers({"f.safetensors"}), std::vector<std::string>{});

  fs::create_directories(path("real"));
  existing("real/t.json");
  fs::create_symlink("real/t.json", path("link.json"));
  write_output_text(path("link.json"), "--report", "new");
  EXPECT_TRUE(fs::is_symlink(path("link.json")));
  EXPECT_EQ(read(path("real/t.json")), "new");
  EXPECT_TRUE(same_file(path("link.json"), path("real/../real/t.json")));
  EXPECT_EQ(read(path("real/t.json.link")), "old bytes");  // replaced by a rename, not rewritten in place
}

TEST_F(OutputFileTest, SafetensorsWriterReplacesAWholeFile) {
  existing("t.safetensors");
  write_safetensors(path("t.safetensors"), {{"x", "U8", {3}, {1, 2, 3}}});
  EXPECT_EQ(read(path("t.safetensors.link")), "old bytes");
  SafetensorsFile f(path("t.safetensors"));
  EXPECT_EQ(f.info("x").shape, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(leftovers({"t.safetensors", "t.safetensors.link"}), std::vector<std::string>{});
}

TEST_F(OutputFileTest, VideoWritersReplaceWholeFiles) {
  existing("v.safetensors");
  write_video(path("v.safetensors"), frames(2, 4, 4));
  EXPECT_EQ(read(path("v.safetensors.link")), "old bytes");
  EXPECT_EQ(SafetensorsFile(path("v.safetensors")).info("video").shape, (std::vector<std::int64_t>{2, 4, 4, 3}));
#ifdef DATTN_WITH_FFMPEG
  existing("v.mp4");
  existing("p.png");
  existing("s_0001.png");
  write_video(path("v.mp4"), frames(2, 16, 16));
  EXPECT_EQ(write_video(path("p.png"), frames(1, 4, 4)), std::vector<std::string>{path("p.png")});
  EXPECT_EQ(write_video(path("s.png"), frames(2, 4, 4)),
            (std::vector<std::string>{path("s_0000.png"), path("s_0001.png")}));
  for (const char* name : {"v.mp4", "p.png", "s_0001.png"}) {
    EXPECT_EQ(read(path(std::string(name) + ".link")), "old bytes") << name;
    EXPECT_GT(fs::file_size(path(name)), 9u) << name;
  }
  EXPECT_EQ(leftovers({"v.safetensors", "v.safetensors.link", "v.mp4", "v.mp4.link", "p.png", "p.png.link",
                       "s_0000.png", "s_0001.png", "s_0001.png.link"}),
            std::vector<std::string>{});
#endif
}

// An encoder that cannot take the frames fails after the output was chosen: the file that was there
// stays as it was (it used to be removed with the partial output).
TEST_F(OutputFileTest, AFailedVideoWriteLeavesTheExistingFile) {
  DATTN_SKIP_WITHOUT_FFMPEG();
  std::ofstream(path("v.mp4"), std::ios::binary) << "old bytes";
  VideoWriteOptions not_h264;
  not_h264.h264_encoder = "png";  // exists, so the up-front check passes, but does not take yuv420p in mp4
  EXPECT_ANY_THROW(write_video(path("v.mp4"), frames(2, 16, 16), not_h264));
  EXPECT_EQ(read(path("v.mp4")), "old bytes");
  EXPECT_EQ(leftovers({"v.mp4"}), std::vector<std::string>{});
}

}  // namespace
