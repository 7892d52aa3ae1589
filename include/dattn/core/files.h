#pragma once
// Checks on the files dattn reads and the disks it writes to. A weights or config path that is a FIFO,
// a device or a directory would block open() or read forever, so readers stat a path before opening it.
#include <cstdint>
#include <string>
#include <system_error>

namespace dattn {

// Throws UserError "<what> '<path>': <why>" unless `path` names a regular file (symlinks followed):
// "does not exist", "is a directory", "is a FIFO (named pipe), not a regular file", ... Never opens it.
void require_regular_file(const std::string& path, const std::string& what);

// The same check, but a path that does not exist passes: for readers whose own "missing" message says
// more (what the folder should hold). Call it right before opening the path.
void refuse_special_file(const std::string& path, const std::string& what);

// " (why)" for a filesystem error other than a missing path (a link loop, a name too long, no permission), to
// follow a message that already says the path is missing or wrong; "" for none or a missing path.
std::string unusual_path_error(const std::error_code& ec);

// A directory a command writes into, removed again with everything written in it unless commit() is
// called: a failed write (disk full, a bad tensor) leaves no half-written model behind. The directory
// must not exist or be empty (a half-overwritten model could mix two); `flag` names it in messages.
class OutputDirectory {
 public:
  OutputDirectory(const std::string& dir, const std::string& flag);
  ~OutputDirectory();
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;
  void commit() { committed_ = true; }

 private:
  std::string dir_;
  bool created_ = false, committed_ = false;
};

// Bytes an unprivileged process may still write on the file system holding `path` (statvfs f_bavail),
// or -1 when it cannot be asked.
std::int64_t free_disk_bytes(const std::string& path);

}  // namespace dattn
