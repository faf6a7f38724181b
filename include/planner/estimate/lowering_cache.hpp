#pragma once
/// The op-level lowering's time part (sharding::lower_times) kept across
/// the estimates of one search.
///
/// Design note
///   A search scores hundreds of layouts that share their model-parallel
///   mesh and micro-batch and differ in pp, vp, dp, ZeRO, schedule or the
///   micro-batch count. What the op-level lowering computes from the graph,
///   the mesh and the cost model's times (strategies, node and edge times)
///   is the same for all of them; only the weight- and memory-dependent
///   costs differ (sharding::add_state_costs, cheap). Keeping the time part
///   makes a layout's lowering a lookup (GPT-3 175B on 1024 A100 spent 44 %
///   of its search in lower_sharding), and so does the time of each op at
///   the strategy a layout chose, and the op-level solver's first pass
///   (the fastest choice, memory ignored) for the layouts whose gradient
///   sync weights agree.
///
///   Keys hold the graph and cost model by address: both must outlive the
///   cache and stay unchanged while it lives (the search owns it for one
///   call, the providers own the graphs and models for longer). Results are
///   the ones lower_times would compute, bit for bit, so an estimate with or
///   without the cache is the same. Thread-safe; two threads that miss on
///   the same key both compute it and the first to store it wins.
///   Entries are kept while the graphs they were built from hold at most
///   `max_ops` ops together (a lowering holds about 0.2 KB per op); past
///   that, lowerings are computed and not kept.

#include <compare>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "planner/cost/compute.hpp"
#include "planner/cost/cost_model.hpp"
#include "planner/graph/graph.hpp"
#include "planner/sharding/op_sharding.hpp"
#include "planner/sharding/lower_sharding.hpp"

namespace planner::estimate {

class LoweringCache {
 public:
  /// What a lowering's time part depends on besides the oracle's state
  /// terms: the graph, the cost model (its times and wire scale), the
  /// model-parallel mesh (cp, tp and its devices per node) and the sharding
  /// options a layout sets.
  struct Key {
    const graph::OpGraph* graph = nullptr;
    const cost::CostModel* model = nullptr;
    int cp = 1, tp = 1, devices_per_node = 1;  ///< of the model-parallel mesh
    bool sequence_parallel = false, tp_splits_batch = false;
    int expert_batch = 1;  ///< the oracle's (expert_batch())
    friend auto operator<=>(const Key&, const Key&) = default;
  };

  /// A kept lowering, and the times of its nodes' ops at the strategies
  /// layouts chose (the same for every layout of the key: the cost model's
  /// op_time at the strategy's local shapes on the same mesh).
  class Entry {
   public:
    explicit Entry(std::shared_ptr<const sharding::LoweredSharding> lowered) : lowered_(std::move(lowered)) {}
    const std::shared_ptr<const sharding::LoweredSharding>& lowered() const { return lowered_; }
    /// The times of every op of node `node` (its instances in order, each
    /// instance's ops in order) at strategy `k`: make() on the first call.
    template <class Make>
    std::shared_ptr<const std::vector<cost::OpTime>> node_times(std::size_t node, std::size_t k, Make&& make) {
      const auto at = std::make_pair(node, k);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (const auto it = times_.find(at); it != times_.end()) return it->second;
      }
      auto made = std::make_shared<const std::vector<cost::OpTime>>(make());
      std::lock_guard<std::mutex> lock(mu_);
      return times_.emplace(at, std::move(made)).first->second;
    }

    /// The op-level solver's first pass (sharding::solve_time_only) for the
    /// layouts whose problems have these per-axis gradient sync weights
    /// (the only time costs a layout adds to the kept lowering when it has
    /// no hints): make() on the first call.
    template <class Make>
    Result<sharding::Solution> first_pass(const std::vector<double>& axis_weights, Make&& make) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (const auto it = first_pass_.find(axis_weights); it != first_pass_.end()) return it->second;
      }
      Result<sharding::Solution> made = make();
      if (!made.ok()) return made;
      std::lock_guard<std::mutex> lock(mu_);
      return first_pass_.emplace(axis_weights, std::move(made).value()).first->second;
    }

    /// What a choice of strategies resolves to on the graph: each op's
    /// strategy and each tensor's layout (pointers into lowered()) and
    /// local fraction (by OpId / TensorId value).
    struct Assignment {
      std::vector<const ops::Strategy*> strategy_of_op;
      std::vector<const layout::TensorLayout*> layout_of_tensor;
      std::vector<double> fraction_of_tensor;
    };
    /// The assignment of `choice`: make() on the first call. At most
    /// kMaxAssignments choices are kept per entry; past that make()'s
    /// result is returned and not kept.
    template <class Make>
    std::shared_ptr<const Assignment> assignment(const sharding::Choice& choice, Make&& make) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (const auto it = assignments_.find(choice); it != assignments_.end()) return it->second;
      }
      auto made = std::make_shared<const Assignment>(make());
      std::lock_guard<std::mutex> lock(mu_);
      if (assignments_.size() >= kMaxAssignments) return made;
      return assignments_.emplace(choice, std::move(made)).first->second;
    }
    static constexpr std::size_t kMaxAssignments = 32;

    /// The least time one micro-batch's ops and model-parallel collectives
    /// can take on the key's mesh (estimate::model_parallel_floor) with
    /// collectives counted at `comm_scale`: make() on the first call.
    template <class Make>
    std::optional<Seconds> floor(double comm_scale, Make&& make) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (const auto it = floor_.find(comm_scale); it != floor_.end()) return it->second;
      }
      const std::optional<Seconds> made = make();
      std::lock_guard<std::mutex> lock(mu_);
      return floor_.emplace(comm_scale, made).first->second;
    }

   private:
    std::shared_ptr<const sharding::LoweredSharding> lowered_;
    std::mutex mu_;
    std::map<std::pair<std::size_t, std::size_t>, std::shared_ptr<const std::vector<cost::OpTime>>> times_;
    std::map<std::vector<double>, sharding::Solution> first_pass_;
    std::map<double, std::optional<Seconds>> floor_;
    std::map<sharding::Choice, std::shared_ptr<const Assignment>> assignments_;
  };

  explicit LoweringCache(std::size_t max_ops = 2'000'000) : max_ops_(max_ops) {}

  /// The kept entry of `key`, or null.
  std::shared_ptr<Entry> find(const Key& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = kept_.find(key);
    return it == kept_.end() ? nullptr : it->second;
  }

  /// Keeps `lowered` for `key` and returns its entry (the one kept already,
  /// if another thread kept one first); null when the op budget is spent.
  std::shared_ptr<Entry> keep(const Key& key, std::shared_ptr<const sharding::LoweredSharding> lowered) {
    std::lock_guard<std::mutex> lock(mu_);
    if (const auto it = kept_.find(key); it != kept_.end()) return it->second;
    const std::size_t ops = key.graph ? key.graph->num_ops() : 0;
    if (ops_ + ops > max_ops_) return nullptr;
    ops_ += ops;
    return kept_.emplace(key, std::make_shared<Entry>(std::move(lowered))).first->second;
  }

  /// Lowerings kept.
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return kept_.size();
  }

 private:
  mutable std::mutex mu_;
  std::map<Key, std::shared_ptr<Entry>> kept_;
  std::size_t ops_ = 0;
  std::size_t max_ops_;
};

}  // namespace planner::estimate
