#pragma once
/// File I/O with the project's rules: reads report the path in their error;
/// writes go to a temporary file in the same folder and are renamed into
/// place, and an existing file is replaced only when the caller says so.

#include <filesystem>
#include <string>
#include <string_view>

#include "planner/core/result.hpp"

namespace planner::io {

/// Reads a whole file. Error names the path.
Result<std::string> read_file(const std::filesystem::path& path);

/// Whether an existing file may be replaced.
enum class Overwrite { refuse, replace };

/// Writes `content` atomically (temp file + rename). With Overwrite::refuse an
/// existing file is an error that suggests --force.
Status write_file(const std::filesystem::path& path, std::string_view content, Overwrite mode);

/// Checks up front that `path` may be written (so long work can fail early).
Status check_writable(const std::filesystem::path& path, Overwrite mode);

}  // namespace planner::io
