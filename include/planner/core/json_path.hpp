#pragma once
/// JSON paths as the readers of plans, profiles and measurements name them in
/// their errors: members joined with dots ("training.precision"), array
/// elements as "[i]" after the array's path. Messages print the path of the
/// value at fault, "(top level)" for the document itself.

#include <string>
#include <string_view>

namespace planner::core {

/// The path of member `key` of the object at `path`: "path.key", or "key"
/// alone when `path` is empty (the top level).
std::string json_path(std::string_view path, std::string_view key);

/// How an error names `path`: the path itself, "(top level)" when empty.
std::string_view describe_json_path(std::string_view path);

}  // namespace planner::core
