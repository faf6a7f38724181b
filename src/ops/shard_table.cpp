// The sharding rule table: every family's rows in one sorted immutable
// vector, lookup, and the fallbacks (broadcasting for elementwise ops without
// a row of their own, replicated for everything else).
#include <algorithm>
#include <tuple>

#include "shard_rules.hpp"

namespace planner::ops {
namespace {

bool row_less(const ShardRule& a, const ShardRule& b) { return std::tie(a.domain, a.type) < std::tie(b.domain, b.type); }

const std::vector<ShardRule>& table() {
  static const std::vector<ShardRule> rows = [] {
    std::vector<ShardRule> v;
    for (auto family : {matmul_shard_rules(), elementwise_shard_rules(), norm_shard_rules(), attention_shard_rules(),
                        embedding_shard_rules(), conv_shard_rules(), movement_shard_rules()})
      v.insert(v.end(), family.begin(), family.end());
    std::sort(v.begin(), v.end(), row_less);
    return v;
  }();
  return rows;
}

const ShardRule* lookup(std::string_view domain, std::string_view type) {
  const auto& rows = table();
  const ShardRule key{domain, type, nullptr};
  auto it = std::lower_bound(rows.begin(), rows.end(), key, row_less);
  if (it != rows.end() && it->domain == domain && it->type == type) return &*it;
  return nullptr;
}

}  // namespace

std::span<const ShardRule> shard_rules() { return table(); }

ShardSpec replicated_spec(const graph::OpGraph& g, graph::OpId id) {
  return shard_detail::SpecBuilder(g, id, "replicated").done();
}

ShardSpec op_spec(const graph::OpGraph& g, graph::OpId id) {
  const graph::Op& op = g.op(id);
  const auto domain = canonical_domain(op.domain);
  const ShardRule* row = lookup(domain, op.type);
  if (!row && !domain.empty()) row = lookup("", op.type);
  if (row) {
    if (auto s = row->fn(g, id)) return std::move(*s);
    return replicated_spec(g, id);
  }
  if (const OpRule* sem = find_rule(op.domain, op.type); sem && sem->class_of(op, g) == graph::OpClass::elementwise)
    if (auto s = shard_detail::broadcast_spec(g, id)) return std::move(*s);
  return replicated_spec(g, id);
}

std::optional<ShardSpec> pattern_spec(const graph::OpGraph& g, const graph::FusedPattern& p) {
  if (p.kind != graph::FusedPattern::Kind::attention || p.ops.size() < 2) return std::nullopt;
  return shard_detail::attention_pattern_spec(g, p);
}

}  // namespace planner::ops
