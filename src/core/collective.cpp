// Collective names (header: core/collective.hpp).

#include "planner/core/collective.hpp"

namespace planner::core {

std::string_view to_string(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_to_all: return "all_to_all";
    case Collective::send_recv: return "send_recv";
    case Collective::broadcast: return "broadcast";
  }
  return "?";
}

std::optional<Collective> parse_collective(std::string_view name) {
  for (Collective c : kCollectives)
    if (to_string(c) == name) return c;
  return std::nullopt;
}

}  // namespace planner::core
