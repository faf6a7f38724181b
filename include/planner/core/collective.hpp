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

}  // namespace planner::core
