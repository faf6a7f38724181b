#pragma once
/// Shell-style globs for names (`--params-from-inputs`, sharding hints).

#include <string_view>

namespace planner {

/// True when `text` matches `pattern`: `*` any run of characters (possibly
/// empty), `?` one character, anything else itself. Iterative with one
/// backtrack point: no recursion, linear-ish time.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace planner
