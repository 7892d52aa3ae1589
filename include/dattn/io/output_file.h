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

// What stands at an output path. A rename never replaces anything but a regular file: a device, a FIFO or
// /dev/stdout renamed over is gone (as root, `--report /dev/null` took the host's /dev/null).
enum class OutputPlace {
  File,    // nothing, or a regular file (through symlinks, the file they name): written by a rename
  Stream,  // a FIFO, a character device (/dev/null, a terminal) or this process's stdout or stderr
};

// Where `path` is written. Throws UserError "WHAT 'PATH' is KIND, not a regular file..." for a folder, a
// block device or a socket, and for a stream unless `stream_ok` (a video needs a seekable regular file).
// This process's stdout or stderr (/dev/stdout, /proc/self/fd/1, or the file stdout is redirected to)
// is a stream even when it is a regular file: a rename would take that file from under the shell.
OutputPlace output_place(const std::string& path, const std::string& what, bool stream_ok);

// The file a rename at `path` replaces: `path`, or when `path` is a symlink (or a chain of them) the
// file it names, so that the link stays and its target gets the new bytes.
std::string replace_target(const std::string& path);

// Whether `a` and `b` are one file: the same device and inode (any spelling, hard links, symlinks), or
// the same path once symlinks are resolved when either does not exist yet.
bool same_file(const std::string& a, const std::string& b);

// Throws UserError "WHAT 'OUTPUT' is the file of INPUT_WHAT; ..." when `output` and `input` are one file
// (same_file). An empty `input` is no file.
void refuse_output_over_input(const std::string& output, const std::string& what, const std::string& input,
                              const std::string& input_what);

// Throws UserError when `output` is an existing file that a model folder `dir` is read from: any file
// in one of its subfolders (components, weights, tokenizers), or at its top model_index.json,
// config.json, *.json of a weight index and *.safetensors. Other files beside them may be replaced.
void refuse_output_in_model(const std::string& output, const std::string& what, const std::string& dir);

// Checks that `path` can be written as a file before any work: nothing but a regular file stands there
// (output_place without streams), its folder exists and takes a new file (probed by creating one), and
// an existing file is writable. Throws UserError "WHAT 'PATH': reason".
void check_output_file(const std::string& path, const std::string& what);

// Writes `text` at `path`: a stream as it is (stdout after what was printed on it), a file replaced
// whole (write_file_replacing). Throws UserError naming `what` and `path`.
void write_output_text(const std::string& path, const std::string& what, const std::string& text);

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
  // "DIR/.STEM.dattn-tmp-PID-N.EXT" in the target's folder: hidden, unique per process and file.
  const std::string& temp() const { return temp_; }
  // Renames temp() over path() (over replace_target(path()) when it is a symlink), keeping an existing
  // file's permission bits. Throws UserError when the temporary was not written, when something other
  // than a regular file now stands at the target (never renamed over), or when the rename fails; the
  // temporary is then removed.
  void commit();

 private:
  std::string path_, target_, temp_;
  bool done_ = false;
};

// `write(temp)` writes the whole file at the temporary name; then it replaces `path`.
void write_file_replacing(const std::string& path, const std::function<void(const std::string& temp)>& write);

}  // namespace dattn
