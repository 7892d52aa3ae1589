// File and disk checks (see files.h).
#include "dattn/core/files.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "dattn/core/error.h"

namespace dattn {

std::string unusual_path_error(const std::error_code& ec) {
  if (!ec || ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) return "";
  return " (" + ec.message() + ")";
}

void require_regular_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    throw UserError(what + " '" + path + "': " + (err == ENOENT ? std::string("does not exist") : std::strerror(err)));
  }
  if (S_ISREG(st.st_mode)) return;
  const char* kind = S_ISDIR(st.st_mode)    ? "is a directory"
                     : S_ISFIFO(st.st_mode) ? "is a FIFO (named pipe)"
                     : S_ISCHR(st.st_mode)  ? "is a character device"
                     : S_ISBLK(st.st_mode)  ? "is a block device"
                     : S_ISSOCK(st.st_mode) ? "is a socket"
                                            : "is not a plain file";
  throw UserError(what + " '" + path + "' " + kind + ", not a regular file");
}

void refuse_special_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return;
  require_regular_file(path, what);
}

OutputDirectory::OutputDirectory(const std::string& dir, const std::string& flag) : dir_(dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !(fs::is_directory(dir, ec) && fs::is_empty(dir, ec)))
    throw UserError(flag + " '" + dir + "' already exists and is not an empty directory; choose a new one");
  created_ = !fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) throw UserError(flag + " '" + dir + "': cannot create the directory: " + ec.message());
}

OutputDirectory::~OutputDirectory() {
  if (committed_) return;
  namespace fs = std::filesystem;
  std::error_code ec;  // best effort: a destructor must not throw
  if (created_) {
    fs::remove_all(dir_, ec);
    return;
  }
  std::vector<fs::path> written;  // collected first: removing while iterating is unspecified
  for (const auto& entry : fs::directory_iterator(dir_, ec)) written.push_back(entry.path());
  for (const auto& p : written) fs::remove_all(p, ec);
}

std::int64_t free_disk_bytes(const std::string& path) {
  struct statvfs fs {};
  if (::statvfs(path.c_str(), &fs) != 0) return -1;
  const unsigned __int128 bytes = static_cast<unsigned __int128>(fs.f_bavail) * fs.f_frsize;
  return bytes > static_cast<unsigned __int128>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(bytes);
}

}  // namespace dattn
