#pragma once
/// Sharding hints (semi-auto parallelism, as MindSpore's semi-auto mode):
/// the user fixes the strategy of named ops or op-name patterns and the
/// op-level search chooses every other op around them, paying the
/// resharding the hints imply (sharding propagation by optimisation).
/// File format: docs/hints-format.md.
///
///   # comment
///   layers.*/mlp/fc1/MatMul   ((1,1,1),(1,8))     shard() notation
///   lm_head/MatMul            tp:n                which axis splits which letter
///   embed/tokens/Gather       replicated
///
/// A pattern is a glob (`*` any run of characters, `?` one) matched against
/// the op names of every copy of a unit (a repeated layer's ops share one
/// strategy, so a hint on one copy applies to all). The first matching line
/// wins. A line that matches no op, or whose strategy the op does not offer
/// on the layout's mesh, is an error naming the line.

#include <string>
#include <string_view>
#include <vector>

#include "planner/core/glob.hpp"
#include "planner/core/result.hpp"

namespace planner::estimate {

struct Hint {
  std::string pattern;
  std::string strategy;  ///< shard() notation, an assignment ("tp:n"), or "replicated"
  int line = 0;
};

/// Parses a hints file. Errors: `SOURCE:LINE: ...` (missing strategy, bad glob).
Result<std::vector<Hint>> parse_hints(std::string_view text, std::string_view source);

/// Hint patterns are core's globs.
using planner::glob_match;

}  // namespace planner::estimate
