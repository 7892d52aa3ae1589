#pragma once
// Output files as users expect them: the folder made as `mkdir -p` would, the path checked before a
// long run, and the file written under a temporary name in the same folder, then renamed over the
// target. A rename within one folder is atomic, so an existing file is replaced whole or not at all:
// a failed or interrupted write never leaves it half-overwritten.
#include <functional>
#include <string>

namespace dattn {

// Creates the folders above `path` that do not exist. `what` names the file in errors ("output",
// "--report"). Throws UserError naming the folder and the reason (e.g. a file is in the way).
void create_parent_folders(const std::string& path, const std::string& what);

// Checks that `path` can be written before any work: its folder exists and takes a new file (probed by
// creating one), `path` is not a folder, and an existing file at `path` is writable. Throws UserError
// "WHAT 'PATH': reason".
void check_output_file(const std::string& path, const std::string& what);

// A file being written: write it at temp(), then commit() renames it to path(). Destroyed without a
// commit (a writer threw), it removes the temporary and leaves path() as it was.
class PendingFile {
 public:
  explicit PendingFile(std::string path);
  ~PendingFile();
  PendingFile(PendingFile&& other) noexcept;
  PendingFile& operator=(PendingFile&&) = delete;
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  const std::string& path() const { return path_; }
  // "DIR/.STEM.dattn-tmp-PID-N.EXT": hidden, unique per process and file, same extension.
  const std::string& temp() const { return temp_; }
  // Renames temp() over path(), keeping an existing file's permission bits. Throws UserError when the
  // temporary was not written or the rename fails (the temporary is then removed).
  void commit();

 private:
  std::string path_, temp_;
  bool done_ = false;
};

// `write(temp)` writes the whole file at the temporary name; then it replaces `path`.
void write_file_replacing(const std::string& path, const std::function<void(const std::string& temp)>& write);

}  // namespace dattn
