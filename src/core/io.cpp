#include "planner/core/io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
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
  if (mode == Overwrite::refuse && std::filesystem::exists(path, ec))
    return make_error("{}: file exists; pass --force to replace it", path.string());
  auto dir = path.parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
    return make_error("{}: folder {} does not exist", path.string(), dir.string());
  return Status::success();
}

Status write_file(const std::filesystem::path& path, std::string_view content, Overwrite mode) {
  PLANNER_TRY_STATUS(check_writable(path, mode));
  auto tmp = path;
  tmp += fmt::format(".tmp.{}", static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return make_error("{}: cannot write: {}", tmp.string(), std::strerror(errno));
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return make_error("{}: write failed", path.string());
    }
  }
  std::error_code ec;
  if (mode == Overwrite::refuse && std::filesystem::exists(path, ec)) {
    std::filesystem::remove(tmp, ec);
    return make_error("{}: file exists; pass --force to replace it", path.string());
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return make_error("{}: cannot rename into place: {}", path.string(), ec.message());
  }
  return Status::success();
}

}  // namespace planner::io
