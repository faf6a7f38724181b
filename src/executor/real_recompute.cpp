// Recomputation in the real mode (real_recompute.hpp).

#include "real_recompute.hpp"

#include <algorithm>
#include <map>

#include "planner/ops/recompute.hpp"

namespace planner::executor::real_detail {

Result<RecomputePlan> plan_recompute(const graph::OpGraph& g, const std::string& policy,
                                     const std::vector<std::vector<graph::OpId>>& chunk_ops) {
  const auto rc = ops::parse_recompute(policy);
  if (!rc) return make_error("training.recompute '{}' is none of none, selective, full", policy);
  RecomputePlan out;
  out.group_of.assign(g.num_ops(), -1);
  for (std::size_t c = 0; c < chunk_ops.size(); ++c) {
    std::map<int, int> index;  // layer (or pattern) -> group, in this chunk
    for (graph::OpId o : chunk_ops[c]) {
      const std::optional<int> key = ops::recompute_group(g.op(o), *rc);
      if (!key) continue;
      auto [it, fresh] = index.emplace(*key, static_cast<int>(out.groups.size()));
      if (fresh) out.groups.push_back({static_cast<int>(c), {}, {}});
      out.groups[static_cast<std::size_t>(it->second)].ops.push_back(o);
      out.group_of[o.value] = it->second;
    }
  }
  for (std::size_t gi = 0; gi < out.groups.size(); ++gi) {
    auto& grp = out.groups[gi];
    for (graph::OpId o : grp.ops)
      for (const auto& t : g.op(o).outputs) {
        if (!t) continue;
        const auto& x = g.tensor(*t);
        const bool output = std::find(g.graph_outputs.begin(), g.graph_outputs.end(), *t) != g.graph_outputs.end();
        bool inside = !output;
        for (auto r : x.consumers) inside = inside && out.group_of[r.value] == static_cast<int>(gi);
        if (inside) grp.dropped.push_back(*t);
      }
  }
  return out;
}

}  // namespace planner::executor::real_detail
