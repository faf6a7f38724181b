#pragma once
/// SHA-256 (FIPS 180-4) of a byte string or a file, as 64 lowercase hex
/// digits: the model identity in plan files.

#include <filesystem>
#include <string>
#include <string_view>

#include "planner/core/result.hpp"

namespace planner {

/// Hex digest of `data`.
std::string sha256_hex(std::string_view data);

/// Hex digest of a file's bytes (read in blocks). Errors name the file.
Result<std::string> sha256_file(const std::filesystem::path& path);

}  // namespace planner
