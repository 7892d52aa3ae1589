// What stands at an output path, and writing to it without renaming over anything but a regular file
// (see output_file.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "dattn/core/error.h"
#include "dattn/io/output_file.h"

namespace fs = std::filesystem;

namespace dattn {
namespace {

bool same_inode(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// 1 or 2 when `st` is this process's stdout or stderr, else -1.
int std_stream_of(const struct stat& st) {
  for (int fd : {1, 2}) {
    struct stat s {};
    if (::fstat(fd, &s) == 0 && same_inode(s, st)) return fd;
  }
  return -1;
}

const char* kind_of(const struct stat& st) {
  return S_ISDIR(st.st_mode)    ? "a folder"
         : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
         : S_ISCHR(st.st_mode)  ? "a character device"
         : S_ISBLK(st.st_mode)  ? "a block device"
         : S_ISSOCK(st.st_mode) ? "a socket"
                                : "not a plain file";
}

void write_all(int fd, const std::string& text, const std::string& what, const std::string& path) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw UserError(what + " '" + path + "': cannot write: " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

// Opens `file` with `flags`, writes `text` and closes it; errors name the user's `path`.
void write_opened(const std::string& file, int flags, const std::string& text, const std::string& what,
                  const std::string& path) {
  const int fd = ::open(file.c_str(), flags, 0666);
  if (fd < 0) throw UserError(what + " '" + path + "': cannot open for writing: " + std::strerror(errno));
  try {
    write_all(fd, text, what, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw UserError(what + " '" + path + "': cannot write: " + std::strerror(errno));
}

}  // namespace

OutputPlace output_place(const std::string& path, const std::string& what, bool stream_ok) {
  struct stat link {}, st {};
  if (::lstat(path.c_str(), &link) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return OutputPlace::File;  // the folder checks say more
    throw UserError(what + " '" + path + "': " + std::strerror(errno));
  }
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return OutputPlace::File;  // a dangling symlink: the file it names is made
    throw UserError(what + " '" + path + "': " + std::strerror(errno));  // a link loop
  }
  const int std_fd = std_stream_of(st);
  if (std_fd < 0 && S_ISREG(st.st_mode)) return OutputPlace::File;
  const bool stream = std_fd > 0 || S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode);
  if (stream && stream_ok) return OutputPlace::Stream;
  if (S_ISDIR(st.st_mode)) throw UserError(what + " '" + path + "' is a folder, expected a file name");
  const std::string kind = std_fd > 0 ? std::string(std_fd == 1 ? "this process's standard output"
                                                                 : "this process's standard error")
                                      : kind_of(st);
  throw UserError(what + " '" + path + "' is " + kind + (stream ? ", where this file cannot be streamed" : "") +
                  ": expected the path of a regular file (or of none yet), which dattn replaces");
}

std::string replace_target(const std::string& path) {
  fs::path p(path);
  for (int hops = 0; hops < 40; ++hops) {  // as the kernel's limit: a loop was refused by output_place
    std::error_code ec;
    if (!fs::is_symlink(p, ec)) break;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) break;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return p.string();
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0) return same_inode(sa, sb);
  std::error_code ec1, ec2;
  const fs::path ca = fs::weakly_canonical(replace_target(a), ec1), cb = fs::weakly_canonical(replace_target(b), ec2);
  return !ec1 && !ec2 && ca == cb;
}

void refuse_output_over_input(const std::string& output, const std::string& what, const std::string& input,
                              const std::string& input_what) {
  if (!input.empty() && same_file(output, input))
    throw UserError(what + " '" + output + "' is the file of " + input_what + "; give the output a path of its own");
}

void refuse_output_in_model(const std::string& output, const std::string& what, const std::string& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(output, ec)) return;
  // The path as renamed, its folders resolved: a Hugging Face snapshot's files are links into blobs/.
  const fs::path out = fs::path(output);
  const fs::path folder = fs::canonical(out.has_parent_path() ? out.parent_path() : fs::path("."), ec);
  const fs::path model = fs::canonical(dir, ec);
  if (ec) return;
  const fs::path rel = folder.lexically_relative(model);
  if (rel.empty() || *rel.begin() == "..") return;  // not inside the model folder
  const std::string name = out.filename().string();
  const auto ends_with = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  const bool read_by_model = rel != "." || name == "model_index.json" || name == "config.json" ||
                             ends_with(".safetensors") || ends_with(".safetensors.index.json");
  if (read_by_model)
    throw UserError(what + " '" + output + "' is a file of the model folder '" + dir +
                    "', which it would replace; give the output a path outside it");
}

void write_output_text(const std::string& path, const std::string& what, const std::string& text) {
  if (output_place(path, what, /*stream_ok=*/true) == OutputPlace::File) {
    write_file_replacing(path, [&](const std::string& temp) {
      write_opened(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, text, what, path);
    });
    return;
  }
  struct stat st {};
  const int std_fd = ::stat(path.c_str(), &st) == 0 ? std_stream_of(st) : -1;
  if (std_fd > 0) {
    // After what this process printed there: its stdio buffer goes first.
    std::fflush(std_fd == 1 ? stdout : stderr);
    write_all(std_fd, text, what, path);
    return;
  }
  // A FIFO waits here for its reader, as `cmd > fifo` does; nothing is created or truncated.
  write_opened(path, O_WRONLY | O_NOCTTY | O_CLOEXEC, text, what, path);
}

}  // namespace dattn
