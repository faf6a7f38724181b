#pragma once
/// Fault injection for tests and `planner run --fault drop:RANK:N`: rank
/// RANK contributes zeros instead of its data to its N-th collective on the
/// communicator the fault is set on (collectives numbered from 1, as in the
/// communicator's errors). Point-to-point calls are not collectives and are
/// never dropped.

#include <cstdint>
#include <string_view>

#include "planner/core/result.hpp"

namespace planner::runtime {

/// "Rank `rank` drops its contribution to collective #`nth`".
struct FaultSpec {
  int rank = 0;
  std::uint64_t nth = 1;  ///< 1-based collective number.
  friend bool operator==(const FaultSpec&, const FaultSpec&) = default;
};

/// Parses "drop:RANK:N" (RANK >= 0, N >= 1). The error names the text and
/// the field at fault, e.g. "--fault 'drop:x:3': RANK is not an integer".
Result<FaultSpec> parse_fault_spec(std::string_view text);

}  // namespace planner::runtime
