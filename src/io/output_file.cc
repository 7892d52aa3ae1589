#include "dattn/io/output_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include "dattn/core/error.h"

namespace fs = std::filesystem;

namespace dattn {
namespace {

fs::path folder_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

}  // namespace

void create_parent_folders(const std::string& path, const std::string& what) {
  const fs::path dir = folder_of(path);
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  fs::create_directories(dir, ec);
  // create_directories reports a file in the way as success on some libstdc++ versions: check the result.
  if (ec || !fs::is_directory(dir))
    throw UserError(what + " '" + path + "': cannot create folder '" + dir.string() +
                    "': " + (ec ? ec.message() : std::string("a file of that name is in the way")));
}

void check_output_file(const std::string& path, const std::string& what) {
  output_place(path, what, /*stream_ok=*/false);
  const fs::path p(replace_target(path));  // through a symlink: the file it names, in its folder
  const fs::path dir = folder_of(p);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw UserError(what + " '" + path + "': folder '" + dir.string() + "' does not exist");
  // Probe: create and remove a file in the folder (permissions, read-only mounts, full quotas). The
  // file itself is written under a temporary name in this folder, so this is the check that matters.
  const fs::path probe = dir / (".dattn_write_probe_" + std::to_string(::getpid()));
  if (std::FILE* f = std::fopen(probe.c_str(), "wb")) {
    std::fclose(f);
    fs::remove(probe, ec);
  } else {
    throw UserError(what + " '" + path + "': cannot write in folder '" + dir.string() + "': " + std::strerror(errno));
  }
  // A read-only file could be replaced by the rename, but read-only says the user meant to keep it.
  if (fs::exists(p, ec) && ::access(p.c_str(), W_OK) != 0)
    throw UserError(what + " '" + path + "' exists and cannot be overwritten: " + std::strerror(errno));
}

PendingFile::PendingFile(std::string path) : path_(std::move(path)), target_(replace_target(path_)) {
  static std::atomic<unsigned> counter{0};
  const fs::path p(target_);  // the temporary beside the file it replaces: a rename within one folder
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "." + std::string temporaries.
  std::string name(1, '.');
  name += p.stem().string();
  name += ".dattn-tmp-";
  name += std::to_string(::getpid());
  name += '-';
  name += std::to_string(++counter);
  name += p.extension().string();
  temp_ = (p.has_parent_path() ? p.parent_path() / name : fs::path(name)).string();
}

PendingFile::PendingFile(PendingFile&& other) noexcept
    : path_(std::move(other.path_)), target_(std::move(other.target_)), temp_(std::move(other.temp_)), done_(other.done_) {
  other.done_ = true;  // the moved-from object owns no temporary
}

PendingFile::~PendingFile() {
  if (done_) return;
  std::error_code ec;
  fs::remove(temp_, ec);
}

void PendingFile::commit() {
  std::error_code ec;
  if (!fs::is_regular_file(temp_, ec))
    throw UserError(path_ + ": the writer produced no file at '" + temp_ + "'");
  // Checked again here, the last moment: a device, FIFO or link put there during the run is never
  // renamed over (every writer commits through here, whatever it checked before).
  const fs::file_status old = fs::symlink_status(target_, ec);
  std::string why;
  if (!ec && fs::exists(old) && !fs::is_regular_file(old)) {
    why = "it is not a regular file (dattn replaces only those)";
  } else {
    if (!ec && fs::is_regular_file(old)) fs::permissions(temp_, old.permissions(), ec);  // best effort
    fs::rename(temp_, target_, ec);
    if (ec) why = ec.message();
  }
  if (!why.empty()) {
    fs::remove(temp_, ec);
    done_ = true;
    throw UserError(path_ + ": cannot replace it with the written file: " + why);
  }
  done_ = true;
}

void write_file_replacing(const std::string& path, const std::function<void(const std::string& temp)>& write) {
  PendingFile file(path);
  write(file.temp());
  file.commit();
}

}  // namespace dattn
