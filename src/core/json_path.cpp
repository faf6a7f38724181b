// JSON paths in reader errors (header: core/json_path.hpp).

#include "planner/core/json_path.hpp"

#include <fmt/format.h>

namespace planner::core {

std::string json_path(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return fmt::format("{}.{}", path, key);
}

std::string_view describe_json_path(std::string_view path) { return path.empty() ? "(top level)" : path; }

}  // namespace planner::core
