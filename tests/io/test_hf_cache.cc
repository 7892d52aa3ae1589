// Hugging Face ids in the local cache: the cache folder's precedence, and ids resolved in a cache laid
// out in a temporary folder as huggingface_hub writes it (refs/ naming commits, snapshots/<commit>/
// files that are relative symlinks into blobs/).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "dattn/core/error.h"
#include "support/config_error.h"
#include "dattn/io/hf_cache.h"

namespace fs = std::filesystem;
using namespace dattn;

namespace {

const std::string kMain = "0123456789abcdef0123456789abcdef01234567";
const std::string kDev = "fedcba9876543210fedcba9876543210fedcba98";

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class HfCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / ("dattn_hf_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(root_);
    cache_ = root_ / "hub";
    fs::create_directories(cache_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Adds snapshot `commit` of models--ORG--NAME holding `file` with `text`, stored as huggingface_hub
  // does: the bytes in blobs/, the snapshot's file a relative symlink to them; `ref` (when given) names it.
  fs::path add_snapshot(const std::string& org, const std::string& name, const std::string& commit,
                        const std::string& file, const std::string& text, const std::string& ref = "") {
    const fs::path repo = cache_ / ("models--" + org + "--" + name);
    fs::create_directories(repo / "blobs");
    const std::string blob = "blob-" + commit.substr(0, 8) + "-" + std::to_string(text.size());
    std::ofstream(repo / "blobs" / blob) << text;
    const fs::path snapshot = repo / "snapshots" / commit;
    const fs::path target = snapshot / file;
    fs::create_directories(target.parent_path());
    fs::path up;  // from the file's folder up to the repo: its subfolders, then <commit> and snapshots/
    for ([[maybe_unused]] const fs::path& part : fs::path(file).parent_path()) up /= "..";
    fs::create_symlink(up / ".." / ".." / "blobs" / blob, target);
    if (!ref.empty()) {
      fs::create_directories((repo / "refs" / ref).parent_path());
      std::ofstream(repo / "refs" / ref) << commit;  // huggingface_hub writes the hash without a newline
    }
    return snapshot;
  }
  EnvLookup env() const { return env_of({{"HF_HUB_CACHE", cache_.string()}}); }

  fs::path root_, cache_;
};

TEST(HfCacheDir, FollowsHuggingFaceHubPrecedence) {
  const auto dir = [](std::map<std::string, std::string> vars) { return hf_hub_cache_dir(env_of(std::move(vars))); };
  EXPECT_EQ(dir({{"HF_HUB_CACHE", "/a"}, {"HF_HOME", "/b"}, {"XDG_CACHE_HOME", "/c"}, {"HOME", "/h"}}).path, "/a");
  EXPECT_EQ(dir({{"HF_HOME", "/b"}, {"XDG_CACHE_HOME", "/c"}, {"HOME", "/h"}}).path, "/b/hub");
  EXPECT_EQ(dir({{"XDG_CACHE_HOME", "/c"}, {"HOME", "/h"}}).path, "/c/huggingface/hub");
  EXPECT_EQ(dir({{"HOME", "/h"}}).path, "/h/.cache/huggingface/hub");
  // Empty counts as unset; a leading ~ is the home folder.
  EXPECT_EQ(dir({{"HF_HUB_CACHE", ""}, {"HF_HOME", "~/hf"}, {"HOME", "/h"}}).path, "/h/hf/hub");
  EXPECT_EQ(dir({{"HF_HUB_CACHE", "~"}, {"HOME", "/h"}}).path, "/h");
  EXPECT_EQ(dir({{"HF_HUB_CACHE", "~user/x"}, {"HOME", "/h"}}).path, "~user/x");  // not ours to expand
  EXPECT_NE(dir({{"HOME", "/h"}}).how.find("HF_HUB_CACHE, HF_HOME and XDG_CACHE_HOME are unset"), std::string::npos);
  EXPECT_EQ(dir({{"HF_HUB_CACHE", "/a"}}).how, "$HF_HUB_CACHE");
}

TEST(HfCacheDir, RepoIdsAndCommitHashes) {
  for (const char* id : {"Wan-AI/Wan2.2-TI2V-5B-Diffusers", "a/b", "org_1/name.v2", "x/y-z"})
    EXPECT_TRUE(is_hf_repo_id(id)) << id;
  for (const char* id : {"", "name", "a/b/c", "/abs", "a/", "/b", "./x", "../x", "a/.x", "a/x.", "a/-x", "a/x--y",
                         "a/x..y", "a b/c", "a/b c", "a/b~"})
    EXPECT_FALSE(is_hf_repo_id(id)) << id;
  EXPECT_TRUE(is_commit_hash(kMain));
  EXPECT_FALSE(is_commit_hash(kMain.substr(1)));
  EXPECT_FALSE(is_commit_hash("0123456789ABCDEF0123456789ABCDEF01234567"));
  EXPECT_FALSE(is_commit_hash("g123456789abcdef0123456789abcdef01234567"));
}

TEST_F(HfCacheTest, AnIdResolvesToTheSnapshotThatRefsMainNames) {
  add_snapshot("Wan-AI", "Tiny", kDev, "model_index.json", "dev", "dev");
  const fs::path main = add_snapshot("Wan-AI", "Tiny", kMain, "transformer/config.json", "{\"main\": 1}", "main");
  const ModelLocation loc = resolve_model_location("Wan-AI/Tiny", "", env());
  EXPECT_EQ(loc.dir, main.string());
  EXPECT_NE(loc.note.find("(refs/main)"), std::string::npos) << loc.note;
  // Files are read through the snapshot's symlinks into blobs/.
  EXPECT_TRUE(fs::is_symlink(fs::path(loc.dir) / "transformer" / "config.json"));
  EXPECT_EQ(read(fs::path(loc.dir) / "transformer" / "config.json"), "{\"main\": 1}");
}

TEST_F(HfCacheTest, RevisionIsARefOrACommitHash) {
  const fs::path dev = add_snapshot("o", "m", kDev, "a.json", "dev", "dev");
  const fs::path main = add_snapshot("o", "m", kMain, "a.json", "main", "main");
  EXPECT_EQ(resolve_model_location("o/m", "dev", env()).dir, dev.string());
  EXPECT_EQ(resolve_model_location("o/m", "main", env()).dir, main.string());
  const ModelLocation by_hash = resolve_model_location("o/m", kDev, env());
  EXPECT_EQ(by_hash.dir, dev.string());
  EXPECT_NE(by_hash.note.find("commit " + kDev), std::string::npos) << by_hash.note;
  // A ref with a slash (pull requests: refs/pr/1) is a file under refs/.
  const fs::path pr = add_snapshot("o", "m", std::string(40, 'a'), "a.json", "pr", "refs/pr/1");
  EXPECT_EQ(resolve_model_location("o/m", "refs/pr/1", env()).dir, pr.string());
}

TEST_F(HfCacheTest, AMissingModelSaysWhereItLookedAndHowToDownloadIt) {
  const std::string e = user_error([&] { resolve_model_location("Wan-AI/Wan2.2-TI2V-5B-Diffusers", "", env()); });
  EXPECT_NE(e.find("--model 'Wan-AI/Wan2.2-TI2V-5B-Diffusers': no such folder, and not in the Hugging Face cache"),
            std::string::npos)
      << e;
  const std::string repo = (cache_ / "models--Wan-AI--Wan2.2-TI2V-5B-Diffusers").string();
  EXPECT_NE(e.find("no folder '" + repo + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("(cache: $HF_HUB_CACHE)"), std::string::npos) << e;
  EXPECT_NE(e.find("'huggingface-cli download Wan-AI/Wan2.2-TI2V-5B-Diffusers'"), std::string::npos) << e;
  EXPECT_NE(e.find("--local-dir DIR' and pass --model DIR"), std::string::npos) << e;
  // With the default cache, the message says which variables were unset.
  const std::string d = user_error([&] { resolve_model_location("o/m", "", env_of({{"HOME", root_.string()}})); });
  EXPECT_NE(d.find((root_ / ".cache/huggingface/hub/models--o--m").string()), std::string::npos) << d;
  EXPECT_NE(d.find("HF_HUB_CACHE, HF_HOME and XDG_CACHE_HOME are unset"), std::string::npos) << d;
}

TEST_F(HfCacheTest, AMissingRefOrSnapshotIsNamed) {
  add_snapshot("o", "m", kMain, "a.json", "main", "main");
  std::string e = user_error([&] { resolve_model_location("o/m", "v2", env()); });
  EXPECT_NE(e.find("no ref '" + (cache_ / "models--o--m" / "refs" / "v2").string() + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("huggingface-cli download o/m --revision v2"), std::string::npos) << e;
  // A commit hash that was never downloaded.
  e = user_error([&] { resolve_model_location("o/m", kDev, env()); });
  EXPECT_NE(e.find("no snapshot '" + (cache_ / "models--o--m" / "snapshots" / kDev).string() + "'"), std::string::npos)
      << e;
  // refs/main names a snapshot that is not there (an interrupted download).
  fs::remove_all(cache_ / "models--o--m" / "snapshots" / kMain);
  e = user_error([&] { resolve_model_location("o/m", "", env()); });
  EXPECT_NE(e.find("which refs/main names; an interrupted download?"), std::string::npos) << e;
  // A ref file that holds no commit hash.
  std::ofstream(cache_ / "models--o--m" / "refs" / "main") << "not a hash\n";
  e = user_error([&] { resolve_model_location("o/m", "", env()); });
  EXPECT_NE(e.find("holds 'not a hash', not a commit hash"), std::string::npos) << e;
}

TEST_F(HfCacheTest, PathsWinAndRevisionsAreChecked) {
  // An existing folder is used as given, even when it is spelled like an id.
  const fs::path local = root_ / "org" / "name";
  fs::create_directories(local);
  const std::string cwd = fs::current_path().string();
  fs::current_path(root_);
  EXPECT_EQ(resolve_model_location("org/name", "", env()).dir, "org/name");
  EXPECT_EQ(resolve_model_location("org/name", "", env()).note, "");
  std::string e = user_error([&] { resolve_model_location("org/name", "main", env()); });
  fs::current_path(cwd);
  EXPECT_NE(e.find("--revision 'main' is for Hugging Face ids (ORG/NAME), but --model 'org/name' is a path"),
            std::string::npos)
      << e;
  // Neither a path nor an id: left to the loader, which says the folder does not exist.
  EXPECT_EQ(resolve_model_location("/no/such/folder/x", "", env()).dir, "/no/such/folder/x");
  // A revision cannot leave the repo folder.
  add_snapshot("o", "m", kMain, "a.json", "main", "main");
  for (const char* bad : {"../../x", "/etc/passwd", "a//b", "a/", "./main", "a\\b"}) {
    e = user_error([&] { resolve_model_location("o/m", bad, env()); });
    EXPECT_NE(e.find("--revision '" + std::string(bad) + "': expected a branch or tag name"), std::string::npos) << e;
  }
}

}  // namespace
