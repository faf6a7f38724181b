#include "planner/core/io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <fcntl.h>
#include <unistd.h>

namespace planner::io {

Result<std::string> read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return make_error("{}: no such file", path.string());
  if (std::filesystem::is_directory(path, ec)) return make_error("{}: is a directory, expected a file", path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("{}: cannot open: {}", path.string(), std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return make_error("{}: read error", path.string());
  return ss.str();
}

Status check_writable(const std::filesystem::path& path, Overwrite mode) {
  std::error_code ec;
  const auto st = std::filesystem::symlink_status(path, ec);
  if (std::filesystem::exists(st)) {
    if (mode == Overwrite::refuse) return make_error("{}: file exists; pass --force to replace it", path.string());
    // --force replaces files only: never a folder, a device such as
    // /dev/null, a FIFO or a socket (rename would put a file in its place).
    const auto target = std::filesystem::status(path, ec);
    if (!std::filesystem::is_regular_file(target))
      return make_error("{}: exists and is not a regular file; not replaced", path.string());
  }
  auto dir = path.parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
    return make_error("{}: folder {} does not exist", path.string(), dir.string());
  return Status::success();
}

namespace {

// Writes all of `content` to fd. False on error (errno set).
bool write_all(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

Status write_file(const std::filesystem::path& path, std::string_view content, Overwrite mode) {
  PLANNER_TRY_STATUS(check_writable(path, mode));
  // A temporary file of our own next to the target (O_EXCL: never an existing
  // file), then renamed into place, so the target is either the old file or
  // the whole new one.
  std::filesystem::path tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path;
    tmp += fmt::format(".tmp.{}.{}", static_cast<long>(::getpid()), attempt);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) return make_error("{}: cannot write: {}", tmp.string(), std::strerror(errno));
  }
  if (fd < 0) return make_error("{}: cannot create a temporary file next to it", path.string());
  std::error_code ec;
  const bool ok = write_all(fd, content);
  const int write_errno = errno;
  if (::close(fd) != 0 || !ok) {
    std::filesystem::remove(tmp, ec);
    return make_error("{}: write failed: {}", path.string(), std::strerror(ok ? errno : write_errno));
  }
  if (mode == Overwrite::refuse) {
    // link() fails if the target appeared meanwhile: no window in which
    // another process's file could be replaced.
    if (::link(tmp.c_str(), path.c_str()) == 0) {
      std::filesystem::remove(tmp, ec);
      return Status::success();
    }
    const int e = errno;
    if (e == EEXIST) {
      std::filesystem::remove(tmp, ec);
      return make_error("{}: file exists; pass --force to replace it", path.string());
    }
    if (e != EPERM && e != ENOTSUP && e != EOPNOTSUPP && e != EXDEV) {
      std::filesystem::remove(tmp, ec);
      return make_error("{}: cannot write: {}", path.string(), std::strerror(e));
    }
    // A file system without hard links: check, then rename.
    if (std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
      std::filesystem::remove(tmp, ec);
      return make_error("{}: file exists; pass --force to replace it", path.string());
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    return make_error("{}: cannot rename into place: {}", path.string(), why);
  }
  return Status::success();
}

}  // namespace planner::io
