// Recomputation in the real mode (real_recompute.hpp).

#include "real_recompute.hpp"

#include <algorithm>
#include <map>

#include "planner/ops/recompute.hpp"

namespace planner::executor::real_detail {

Result<RecomputePlan> plan_recompute(const graph::OpGraph& g, const std::string& policy, const std::string& modules,
                                     const std::vector<std::vector<graph::OpId>>& chunk_ops) {
  const auto rc = ops::parse_recompute(policy);
  if (!rc) return make_error("training.recompute '{}' is none of none, selective, full", policy);
  ops::RecomputeModules mods;
  if (!modules.empty()) {
    auto m = ops::RecomputeModules::parse(modules);
    if (!m) return make_error("training.recompute_modules: {}", m.error().message);
    mods = *m;
  }
  RecomputePlan out;
  out.group_of.assign(g.num_ops(), -1);
  out.reads_dropped.assign(g.num_ops(), {});
  std::vector<int> chunk_of(g.num_ops(), -1), position(g.num_ops(), -1);
  std::vector<bool> drops_outputs;
  for (std::size_t c = 0; c < chunk_ops.size(); ++c) {
    std::map<int, int> index;  // layer (or pattern, norm, expert activation) -> group, in this chunk
    for (std::size_t j = 0; j < chunk_ops[c].size(); ++j) {
      const graph::OpId o = chunk_ops[c][j];
      chunk_of[o.value] = static_cast<int>(c);
      position[o.value] = static_cast<int>(j);
      const std::optional<int> key = ops::recompute_group(g.op(o), *rc, mods);
      if (!key) continue;
      auto [it, fresh] = index.emplace(*key, static_cast<int>(out.groups.size()));
      if (fresh) {
        out.groups.push_back({static_cast<int>(c), {}, {}, o});
        drops_outputs.push_back(ops::output_dropping_group(g.op(o), *rc, mods).has_value());
      }
      out.groups[static_cast<std::size_t>(it->second)].ops.push_back(o);
      out.group_of[o.value] = it->second;
    }
  }
  for (std::size_t gi = 0; gi < out.groups.size(); ++gi) {
    auto& grp = out.groups[gi];
    grp.drop_after = grp.ops.back();
    for (graph::OpId o : grp.ops)
      for (const auto& t : g.op(o).outputs) {
        if (!t) continue;
        const auto& x = g.tensor(*t);
        if (std::find(g.graph_outputs.begin(), g.graph_outputs.end(), *t) != g.graph_outputs.end()) continue;
        bool inside = true, in_chunk = true;
        for (auto r : x.consumers) {
          inside = inside && out.group_of[r.value] == static_cast<int>(gi);
          in_chunk = in_chunk && chunk_of[r.value] == grp.chunk;
        }
        if (!(inside || (drops_outputs[gi] && in_chunk))) continue;
        grp.dropped.push_back(*t);
        for (auto r : x.consumers) {
          if (out.group_of[r.value] == static_cast<int>(gi)) continue;
          auto& reads = out.reads_dropped[r.value];
          if (std::find(reads.begin(), reads.end(), static_cast<int>(gi)) == reads.end())
            reads.push_back(static_cast<int>(gi));
          if (position[r.value] > position[grp.drop_after.value]) grp.drop_after = r;
        }
      }
  }
  out.drops_after.assign(g.num_ops(), {});
  for (std::size_t gi = 0; gi < out.groups.size(); ++gi)
    out.drops_after[out.groups[gi].drop_after.value].push_back(static_cast<int>(gi));
  return out;
}

}  // namespace planner::executor::real_detail
