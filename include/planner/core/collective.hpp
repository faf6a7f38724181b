#pragma once
/// The collectives of the whole program, one vocabulary: the cost model
/// prices them (cluster/collective.hpp), redistributions produce them
/// (layout/redistribute.hpp), the executor runs them (executor/program.hpp)
/// and calibrate times them. Their names are the spellings of the profile
/// JSON keys and of the plan's collective kinds.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace planner::core {

/// A collective communication over a group of ranks. The enumerator order
/// indexes per-collective arrays (cluster::Level::per_collective).
enum class Collective : std::uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast };
inline constexpr std::size_t kCollectiveCount = 6;
/// Every collective, in enumerator order.
inline constexpr std::array<Collective, kCollectiveCount> kCollectives{
    Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
    Collective::all_to_all, Collective::send_recv,  Collective::broadcast,
};

/// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv",
/// "broadcast".
std::string_view to_string(Collective c);
/// Parses to_string() output back; nullopt for any other text.
std::optional<Collective> parse_collective(std::string_view name);

/// Where the ranks of one collective sit, as the cost model prices it
/// (cluster::collective_time, cost::CostModel::collective). Compact
/// placement: the ranks of a node fill its innermost groups first.
/// Requires (checked by the pricer): ranks >= 1, 1 <= ranks_per_node <=
/// devices_per_node, ranks a multiple of ranks_per_node (or ranks ==
/// ranks_per_node); for send_recv ranks == 2 (ranks_per_node 2: same node,
/// 1: different nodes).
struct Placement {
  int ranks = 1;
  int ranks_per_node = 1;
  /// One ring only (a library that does not open one NCCL channel per NIC,
  /// e.g. DeepSpeed's 2021 ZeRO-3 fetches): across nodes a flat ring then
  /// gets one rank's share of its node's NICs instead of the whole node's.
  bool single_ring = false;
};

}  // namespace planner::core
