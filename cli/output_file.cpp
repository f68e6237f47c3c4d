#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;

// A new empty file in `path`'s folder, named after it: its descriptor (or -1
// with errno set) and, in *name, its path.
int make_temp(const std::string& path, std::string* name) {
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::string temp_name(".");  // appended, not "." + ...: GCC 12 warns falsely (-Wrestrict) on that operator+
  temp_name += p.filename().string();
  temp_name += ".tmp.XXXXXX";
  std::string pattern = (dir / temp_name).string();
  const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd >= 0) *name = std::move(pattern);
  return fd;
}

// Writes all of `text`; returns 0 or the errno of the failure.
int write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

// mkostemp makes the file 0600; give it what opening `path` would have: the
// mode of the file it replaces, or 0666 less the umask for a new one.
int set_mode(int fd, const std::string& path) {
  struct stat st {};
  mode_t mode = 0;
  if (::stat(path.c_str(), &st) == 0) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  return ::fchmod(fd, mode) == 0 ? 0 : errno;
}

}  // namespace

Result<OutputFile> OutputFile::check(const std::string& path, const std::string& what) {
  auto refuse = [&](int err) {
    return InvalidArgument(fmt::format("cannot write {} to '{}': {}", what, path, std::strerror(err)));
  };
  if (path.empty()) return refuse(ENOENT);
  OutputFile file;
  file.path_ = path;
  file.what_ = what;
  if (fs::path(path).filename().empty()) return refuse(EISDIR);  // "dir/"

  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return refuse(errno);  // ENOTDIR, EACCES, ELOOP...
  } else if (S_ISDIR(st.st_mode)) {
    return refuse(EISDIR);
  } else if (!S_ISREG(st.st_mode)) {
    // A link, a device, a pipe: written in place. A link to a folder is refused;
    // a link to nothing yet is fine (opening it creates its target).
    struct stat target {};
    if (::stat(path.c_str(), &target) == 0) {
      if (S_ISDIR(target.st_mode)) return refuse(EISDIR);
      if (::access(path.c_str(), W_OK) != 0) return refuse(errno);
    }
    file.in_place_ = true;
    return file;
  } else if (::access(path.c_str(), W_OK) != 0) {
    return refuse(errno);  // a read-only file is not replaced behind the user's back
  }

  // The folder must take a new file (the temporary one write() renames).
  std::string probe;
  const int fd = make_temp(path, &probe);
  if (fd < 0) return refuse(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return file;
}

Status OutputFile::write(std::string_view text) const {
  auto fail = [&](int err) {
    return Internal(fmt::format("cannot write {} to '{}': {}", what_, path_, std::strerror(err)));
  };
  if (in_place_) {
    // "/dev/stdout" or "/dev/stderr" (or another name of the file one of them
    // is): written after what the command printed there, not over it.
    struct stat target {};
    if (::stat(path_.c_str(), &target) == 0) {
      for (FILE* stream : {stdout, stderr}) {
        struct stat st {};
        const int stream_fd = ::fileno(stream);
        if (::fstat(stream_fd, &st) == 0 && st.st_dev == target.st_dev && st.st_ino == target.st_ino) {
          std::fflush(stream);
          const int err = write_all(stream_fd, text);
          return err == 0 ? Status::Ok() : fail(err);
        }
      }
    }
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return fail(errno);
    int err = write_all(fd, text);
    if (::close(fd) != 0 && err == 0) err = errno;
    return err == 0 ? Status::Ok() : fail(err);
  }
  std::string temp;
  const int fd = make_temp(path_, &temp);
  if (fd < 0) return fail(errno);
  int err = write_all(fd, text);
  if (err == 0) err = set_mode(fd, path_);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(temp.c_str(), path_.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(temp.c_str());
    return fail(err);
  }
  return Status::Ok();
}

}  // namespace tessera::cli
