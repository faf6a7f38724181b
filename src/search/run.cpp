// search(): bounds, memory pruning and batched branch and bound over the
// enumerated layouts (design note in include/planner/search/search.hpp).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "planner/estimate/optimizer_bytes.hpp"
#include "planner/search/search.hpp"

namespace planner::search {
namespace {

using Clock = std::chrono::steady_clock;

// Fastest first; ties by canonical order.
bool better(const Scored& a, const Scored& b) {
  if (a.estimate.step_time.value != b.estimate.step_time.value)
    return a.estimate.step_time.value < b.estimate.step_time.value;
  return a.candidate.order < b.candidate.order;
}

}  // namespace

Result<Outcome> search(const Space& space, const GraphProvider& graphs, const ModelProvider& models,
                       const Options& options) {
  const auto t0 = Clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  Outcome r;
  // Facts from the smallest micro-batch's graph (sizes scale with the batch).
  PLANNER_TRY(const graph::OpGraph* g1, graphs(space.fixed.micro_batch.value_or(1)));
  const ModelFacts facts = facts_of(*g1, space.fixed.micro_batch.value_or(1));
  auto candidates = enumerate_layouts(space, facts);
  r.enumerated = candidates.size();
  if (candidates.empty())
    return make_error("no layout of {} devices fits the constraints (global batch {}, `fix`, heads {}, layers {})",
                      space.devices, space.global_batch, facts.heads, facts.layers);

  // Cost models per policy (the capacity and peak come from them).
  std::map<cost::RecomputePolicy, const cost::CostModel*> cm;
  for (const auto& c : candidates)
    if (!cm.count(c.recompute)) {
      PLANNER_TRY(const cost::CostModel* m, models(c.recompute));
      cm[c.recompute] = m;
    }
  // Selective recompute of core attention only drops the s x s attention
  // tensors a flash kernel never keeps: under flash it is the same layout as
  // no recompute (other modules, --recompute-modules, drop more).
  if (cm.count(cost::RecomputePolicy::selective) && cm.count(cost::RecomputePolicy::none) &&
      cm.at(cost::RecomputePolicy::selective)->context().attention() == cost::AttentionMode::flash &&
      cm.at(cost::RecomputePolicy::selective)->context().recompute_modules().is_default())
    std::erase_if(candidates, [](const Candidate& c) { return c.recompute == cost::RecomputePolicy::selective; });
  r.enumerated = candidates.size();
  r.space = space_ranges(candidates);
  const cost::CostModel& any = *cm.begin()->second;
  const double margin = space.memory_margin.value_or(any.memory_margin());
  const double limit = std::min(space.max_memory_fraction, 1.0 - margin);
  const Bytes capacity = any.device_memory() * limit;
  // Below the whole device (a margin, or --max-memory-fraction) the reserved
  // peak (allocated plus the allocator's fragmentation) must keep under the
  // limit; at the whole device only the allocated peak must fit: the caching
  // allocator frees its cache and retries before it reports out-of-memory.
  const bool reserved_limit = limit < 1.0;
  auto kept_peak = [&](const estimate::StageMemory& s) { return reserved_limit ? s.peak() : s.allocated(); };
  r.speed_of_light = Seconds(facts.flops_per_sample.value * static_cast<double>(space.global_batch) /
                             (space.devices * any.peak().value));

  // Bounds for every layout (the space's bound covers the bound-pruned and
  // the unvisited ones too, not the memory-pruned, which cannot fit),
  // memory floor pruning, then order.
  std::vector<Candidate> live;
  Bytes smallest_floor(std::numeric_limits<double>::infinity()), smallest_state = smallest_floor;
  Seconds space_bound(std::numeric_limits<double>::infinity());
  // The bytes and launch terms follow the profile model's op pricing (a
  // roofline plus launches per kernel); other cost models get without them.
  std::map<cost::RecomputePolicy, MemoryFacts> memory;
  for (const auto& [policy, m] : cm)
    if (dynamic_cast<const cost::ProfileCostModel*>(m)) memory[policy] = memory_facts(*g1, *m);
  // Indexed by canonical order (the selective layouts erased above leave gaps).
  std::size_t orders = 0;
  for (const auto& c : candidates) orders = std::max(orders, c.order + 1);
  std::vector<bool> memory_pruned(orders, false);
  // Activations and loss buffer of one micro-batch per (micro-batch,
  // policy), whole (estimate::saved_bytes). A model's experts hold their
  // activations whole on every rank too: a rank's E/ep experts take the
  // tokens routed to them from its ep group, ep x (1/ep) of one
  // micro-batch's.
  std::map<std::pair<int, cost::RecomputePolicy>, estimate::SavedBytes> saved;
  std::map<cost::RecomputePolicy, Bytes> reserve;  // CUDA context + communicator per model
  std::map<cost::RecomputePolicy, BoundMemo> bound_memo;
  // Each layout's bound in parts, by order (with_model_parallel_floor
  // tightens it before the layout is scored).
  std::vector<LayoutBound> bounds(orders);
  for (auto& c : candidates) {
    const auto mem = memory.find(c.recompute);
    bounds[c.order] = layout_bound(c, facts, *cm.at(c.recompute), mem == memory.end() ? nullptr : &mem->second,
                                   &bound_memo[c.recompute]);
    c.bound = bounds[c.order].total;
    smallest_state = std::min(smallest_state, memory_floor(c, facts));
    // The ranks also hold their micro-batches' activations in flight, the
    // last one the loss buffer, the allocator's fragmentation and the
    // context and communicator reserve (stage_memory_floor): a layout whose
    // fullest rank overflows the device cannot fit.
    const auto key = std::make_pair(c.config.micro_batch, c.recompute);
    auto it = saved.find(key);
    if (it == saved.end()) {
      PLANNER_TRY(const graph::OpGraph* gm, graphs(c.config.micro_batch));
      it = saved.emplace(key, estimate::saved_bytes(*gm, *cm.at(c.recompute), c.recompute)).first;
    }
    auto rv = reserve.find(c.recompute);
    if (rv == reserve.end()) {
      const cost::MemoryBreakdown base = cm.at(c.recompute)->memory(*g1, cost::MemorySetup{});
      rv = reserve.emplace(c.recompute, base.cuda_context + base.communicator).first;
    }
    const auto training = cm.at(c.recompute)->context().precision().default_precision();
    const Bytes floor = stage_memory_floor(c, facts, it->second, rv->second,
                                           reserved_limit ? cm.at(c.recompute)->fragmentation() : 0.0,
                                           estimate::framework_gradient_bytes(c.config, training));
    smallest_floor = std::min(smallest_floor, floor);
    if (floor > capacity) {
      // Its model state (and activations) overflow the device: no estimate
      // of it fits, so its bound says nothing about the best fitting step.
      ++r.pruned_memory;
      memory_pruned[c.order] = true;
      continue;
    }
    live.push_back(c);
  }
  // Context-parallel layouts with a data-parallel twin (twin_of) wait for a
  // second round, scored only where the twin gave no fitting estimate.
  std::vector<std::optional<std::size_t>> twins(orders);  // the twin's order
  if (!space.fixed.cp) {
    const auto t = twin_of(candidates);
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if (t[i] && !memory_pruned[candidates[*t[i]].order]) twins[candidates[i].order] = candidates[*t[i]].order;
  }
  std::vector<Candidate> deferred;
  std::erase_if(live, [&](const Candidate& c) {
    if (!twins[c.order]) return false;
    deferred.push_back(c);
    return true;
  });
  auto by_bound = [](const Candidate& a, const Candidate& b) {
    if (a.bound.value != b.bound.value) return a.bound.value < b.bound.value;
    return a.order < b.order;
  };
  std::stable_sort(live.begin(), live.end(), by_bound);
  std::stable_sort(deferred.begin(), deferred.end(), by_bound);

  std::vector<Scored> fitting;
  // Layouts sharing their micro-batch, recompute policy, cp, tp and
  // sequence parallelism share the op-level lowering's time part.
  estimate::LoweringCache lowerings;
  Bytes smallest_peak(std::numeric_limits<double>::infinity());
  std::string smallest_item;
  std::map<std::string, int> failure_counts;
  // Each estimate in flight holds its own per-op tables (lowered sharding,
  // layouts, times): about 0.2 KB per op (a million-op model: 2.4 GB after
  // import, 2.6 GB with one estimate in flight). At most kConcurrentOps
  // ops' worth run at once (16 estimates of a million ops, about 3 GB), so
  // a larger graph on many cores stays within memory; results do not
  // depend on the thread count.
  constexpr std::size_t kConcurrentOps = 16'000'000;
  const int threads = std::max(
      1, std::min(options.threads, static_cast<int>(std::min<std::size_t>(
                                       1024, kConcurrentOps / std::max<std::size_t>(1, g1->num_ops())))));
  // Orders of the candidates scored with a fitting estimate.
  std::vector<bool> fit(orders, false);
  // Predicted step less the pipeline bubble of every layout scored without
  // error, fitting or not (-inf for a failed one).
  std::vector<std::optional<double>> step_of(orders);
  // The bound with the model-parallel floor (estimate::model_parallel_floor:
  // the op-level lowering's time-only optimum, shared by the layouts of a
  // lowering key), by order; NaN where not worked out. A layout whose
  // bound is below the incumbent gets it before it is scored, and is pruned
  // when that is not. Past kFloorOps ops a lowering is about as costly as
  // the estimate and the cache keeps few of them: no floors.
  constexpr std::size_t kFloorOps = 100'000;
  const bool floors = g1->num_ops() <= kFloorOps;
  std::vector<double> tight(orders, std::numeric_limits<double>::quiet_NaN());
  std::vector<bool> scored(orders, false);
  auto tighten = [&](const Candidate& c, const graph::OpGraph& g) {
    if (!std::isnan(tight[c.order])) return tight[c.order];
    double b = c.bound.value;
    if (floors) {
      const auto floor = estimate::model_parallel_floor(g, *cm.at(c.recompute), c.config, &lowerings);
      if (floor.ok() && *floor) b = with_model_parallel_floor(bounds[c.order], c, **floor).total.value;
    }
    tight[c.order] = b;
    return b;
  };
  // What a layout must beat to be scored: the top_k-th fitting step found
  // so far (the best with top_k 1), so the runners-up kept are the space's
  // next best and not whichever were scored.
  auto threshold = [&] {
    return fitting.size() < std::max<std::size_t>(1, options.top_k) ? std::numeric_limits<double>::infinity()
                                                                     : fitting.back().estimate.step_time.value;
  };
  bool stopped = false;
  // Branch and bound over `list` (sorted by bound), in batches.
  auto run_batches = [&](const std::vector<Candidate>& list) -> Status {
  std::size_t next = 0;
  while (next < list.size()) {
    const double incumbent = threshold();
    // The next batch of candidates whose bound can still beat the incumbent.
    std::vector<const Candidate*> batch;
    while (next < list.size() && batch.size() < options.batch) {
      const Candidate& c = list[next++];
      if (c.bound.value >= incumbent) {
        ++r.pruned_bound;
        continue;
      }
      batch.push_back(&c);
    }
    if (batch.empty()) continue;
    // Graphs for the batch's micro-batches, fetched before the threads start.
    std::map<int, const graph::OpGraph*> gs;
    for (const auto* c : batch)
      if (!gs.count(c->config.micro_batch)) {
        PLANNER_TRY(const graph::OpGraph* g, graphs(c->config.micro_batch));
        gs[c->config.micro_batch] = g;
      }
    std::vector<std::optional<Result<estimate::Estimate>>> out(batch.size());
    std::atomic<std::size_t> cursor{0};
    // Past the time limit, a batch starts no further candidate once the
    // search holds a plan (a large graph's estimates can take seconds each;
    // the limit would otherwise wait for the whole batch).
    const bool have_plan = !fitting.empty();
    std::vector<char> timed_out(batch.size(), 0);
    auto work = [&] {
      for (std::size_t i = cursor++; i < batch.size(); i = cursor++) {
        const Candidate& c = *batch[i];
        if (have_plan && elapsed_s() > options.time_limit_s) {
          timed_out[i] = 1;
          continue;
        }
        // The incumbent is the batch's start's whatever the threads.
        if (tighten(c, *gs.at(c.config.micro_batch)) >= incumbent) continue;
        out[i] = estimate::estimate(*gs.at(c.config.micro_batch), *cm.at(c.recompute), c.config,
                                    estimate::EstimateOptions{.advise = false, .solver = options.solver,
                                                              .lowering_cache = &lowerings, .describe = false});
      }
    };
    if (threads == 1 || batch.size() == 1) {
      work();
    } else {
      std::vector<std::thread> pool;
      for (int t = 0; t < std::min<int>(threads, static_cast<int>(batch.size())); ++t) pool.emplace_back(work);
      for (auto& t : pool) t.join();
    }
    bool cut = false;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (timed_out[i]) {
        cut = true;
        continue;
      }
      if (!out[i]) {
        ++r.pruned_bound;
        continue;
      }
      ++r.scored;
      scored[batch[i]->order] = true;
      auto& res = *out[i];
      if (!res.ok()) {
        ++r.failed;
        step_of[batch[i]->order] = -std::numeric_limits<double>::infinity();  // no estimate: try its cp twins
        if (++failure_counts[res.error().message] == 1 && r.failures.size() < 5)
          r.failures.push_back(describe(*batch[i]) + ": " + res.error().message);
        continue;
      }
      step_of[batch[i]->order] = res->step_time.value - res->bubble.value;
      const auto& peak = res->peak_stage();
      if (res->fits && kept_peak(peak) <= capacity) {
        fit[batch[i]->order] = true;
        fitting.push_back(Scored{*batch[i], std::move(res).value()});
      } else {
        ++r.unfit;
        if (kept_peak(peak) < smallest_peak) {
          smallest_peak = kept_peak(peak);
          const auto items = peak.breakdown.largest_items();
          smallest_item = items.empty() ? std::string() : std::string(cost::memory_kind_name(items.front().kind));
        }
      }
    }
    std::sort(fitting.begin(), fitting.end(), better);
    if (fitting.size() > options.top_k) fitting.resize(options.top_k);
    if (options.progress) options.progress(next, live.size());
    if (cut || (elapsed_s() > options.time_limit_s && next < list.size())) {
      r.complete = false;
      stopped = true;
      break;
    }
  }
  return {};
  };
  PLANNER_TRY_STATUS(run_batches(live));
  // Second round, by cp ascending. A deferred layout does its twin's work
  // plus the context-parallel exchanges in less activation memory, and with
  // pp > 1 fills the pipeline with cp times the micro-batches: its step is
  // taken to be at least its twin's less the twin's pipeline bubble. It is
  // scored only where that is below the incumbent (and its bound too), the
  // twin having been scored (a twin left unscored had a bound no better
  // than the incumbent; with pp = 1 the deferred layout's is no better
  // either, with pp > 1 its own bound decides) or having failed; with
  // pp = 1 also only where no smaller cp of the same twin fit (the smallest
  // cp that fits, as Megatron users choose it).
  std::set<int> levels;
  for (const auto& c : deferred) levels.insert(c.config.cp);
  std::vector<bool> twin_done(orders, false);  // a smaller cp of this twin fit (pp = 1)
  for (int level : levels) {
    std::vector<Candidate> round;
    const double incumbent = threshold();
    for (const auto& c : deferred) {
      if (c.config.cp != level) continue;
      const std::size_t t = *twins[c.order];
      const bool piped = c.config.pp > 1;
      const bool skip = stopped || (!piped && twin_done[t]) || (step_of[t] ? *step_of[t] >= incumbent : !piped);
      if (skip) ++r.pruned_twin;
      else round.push_back(c);
    }
    if (round.empty()) continue;
    PLANNER_TRY_STATUS(run_batches(round));
    for (const auto& c : round)
      if (fit[c.order]) twin_done[*twins[c.order]] = true;
  }
  if (fitting.empty()) {
    constexpr double kGiB = 1024.0 * 1024 * 1024;
    // "79.21 GiB", or "71.29 GiB (79.21 GiB less the 10 % memory margin)".
    std::string against = fmt::format("{:.2f} GiB", capacity.value / kGiB);
    if (capacity < any.device_memory() * space.max_memory_fraction)
      against += fmt::format(" ({:.2f} GiB less the {:g} % memory margin; --memory-margin)",
                             any.device_memory().value / kGiB, 100 * margin);
    // Stopped by the time limit, the search has not shown that nothing fits.
    if (stopped)
      return make_error("the search stopped at --time-limit {:g} s before a layout it scored fit ({} of {} layouts "
                        "scored{}); raise --time-limit",
                        options.time_limit_s, r.scored, r.enumerated,
                        smallest_peak.value < std::numeric_limits<double>::infinity()
                            ? fmt::format("; the smallest needs {:.2f} GiB per device against {}",
                                          smallest_peak.value / kGiB, against)
                            : std::string());
    if (smallest_peak.value < std::numeric_limits<double>::infinity())
      return make_error("{}: the smallest scored needs {:.2f} GiB per device (largest item: {}) against {}", kNoLayoutFits,
                        smallest_peak.value / kGiB, smallest_item, against);
    if (!r.failures.empty()) return make_error("no layout could be costed: {}", r.failures.front());
    if (smallest_state > capacity)
      return make_error("{}: even the model state needs {:.2f} GiB per device against {}", kNoLayoutFits,
                        smallest_state.value / kGiB, against);
    return make_error("{}: the model state and the activations in flight need at least {:.2f} GiB per device "
                      "against {}",
                      kNoLayoutFits, smallest_floor.value / kGiB, against);
  }
  // The space's bound: the best step found, and the bound of every layout
  // not scored whose model state fits (a scored layout's step is known:
  // the best is at most it, or it does not fit or failed), tightened by
  // its floor where that was worked out or, below the best, is worked out
  // now (the twin rule's layouts) while the time limit lasts: past it the
  // untightened bound stands (lower, still a bound) and the search counts
  // as stopped by the limit, so --time-limit bounds this pass too (a
  // mixture of experts' lowerings take a second each).
  const double best = fitting.front().estimate.step_time.value;
  auto cover = [&](const std::vector<Candidate>& list) -> Status {
    for (const auto& c : list) {
      if (scored[c.order]) continue;
      double b = std::isnan(tight[c.order]) ? c.bound.value : tight[c.order];
      if (std::isnan(tight[c.order]) && b < best && !stopped && floors) {
        if (elapsed_s() > options.time_limit_s) {
          r.complete = false;
          stopped = true;
        } else {
          PLANNER_TRY(const graph::OpGraph* g, graphs(c.config.micro_batch));
          b = tighten(c, *g);
        }
      }
      space_bound = std::min(space_bound, Seconds(b));
    }
    return {};
  };
  PLANNER_TRY_STATUS(cover(live));
  PLANNER_TRY_STATUS(cover(deferred));
  r.elapsed_s = elapsed_s();
  r.best = std::move(fitting);
  r.lower_bound = std::min(r.best.front().estimate.step_time, space_bound);
  return r;
}

}  // namespace planner::search
