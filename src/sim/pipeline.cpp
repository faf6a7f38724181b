#include "planner/sim/pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <fmt/format.h>

namespace planner::sim {

namespace {

constexpr int kNoWaiter = -1;

// Dense index of every op: forwards first, then backwards; chunk-major.
struct OpIndex {
  int chunks = 0;
  int micro_batches = 0;
  std::size_t size() const { return 2 * static_cast<std::size_t>(chunks) * static_cast<std::size_t>(micro_batches); }
  std::size_t operator()(StepKind kind, int chunk, int mb) const {
    const std::size_t c = static_cast<std::size_t>(chunk) + (kind == StepKind::backward ? chunks : 0);
    return c * static_cast<std::size_t>(micro_batches) + static_cast<std::size_t>(mb);
  }
  std::size_t operator()(const ScheduleStep& s) const { return (*this)(s.kind, s.chunk, s.micro_batch); }
};

std::string describe(const ScheduleStep& s) {
  return fmt::format("{} of micro-batch {} on chunk {}", s.kind == StepKind::forward ? "forward" : "backward",
                     s.micro_batch, s.chunk);
}

// Checks that device d's order holds exactly the ops of the chunks living
// on d, each once.
Status check_orders(const PipelineProblem& pr, const DeviceOrders& orders, const OpIndex& index) {
  if (orders.size() != static_cast<std::size_t>(pr.stages))
    return make_error("pipeline: {} device orders given for {} stages", orders.size(), pr.stages);
  std::vector<char> seen(index.size(), 0);
  std::size_t count = 0;
  for (std::size_t d = 0; d < orders.size(); ++d) {
    for (std::size_t pos = 0; pos < orders[d].size(); ++pos) {
      const ScheduleStep& s = orders[d][pos];
      if (s.kind != StepKind::forward && s.kind != StepKind::backward)
        return make_error("pipeline: device {} op {} has an unknown kind", d, pos);
      if (s.micro_batch < 0 || s.micro_batch >= pr.micro_batches || s.chunk < 0 || s.chunk >= pr.num_chunks())
        return make_error("pipeline: device {} op {} ({}) is out of range (m = {}, chunks = {})", d, pos, describe(s),
                          pr.micro_batches, pr.num_chunks());
      if (static_cast<std::size_t>(s.chunk % pr.stages) != d)
        return make_error("pipeline: device {} op {} ({}) belongs to device {}", d, pos, describe(s),
                          s.chunk % pr.stages);
      char& mark = seen[index(s)];
      if (mark) return make_error("pipeline: device {} op {} ({}) appears twice", d, pos, describe(s));
      mark = 1;
      ++count;
    }
  }
  if (count != index.size()) {
    for (int c = 0; c < index.chunks; ++c)
      for (int i = 0; i < index.micro_batches; ++i)
        for (StepKind k : {StepKind::forward, StepKind::backward})
          if (!seen[index(k, c, i)])
            return make_error("pipeline: the order of device {} lacks the {}", c % pr.stages,
                              describe({k, i, c}));
  }
  return Status::success();
}

// The single op that must finish before `s` can start, and the transfer
// time after it; none for the forward of chunk 0.
struct Dependency {
  bool exists = false;
  ScheduleStep op;
  double transfer = 0.0;
};

Dependency dependency_of(const ScheduleStep& s, const PipelineProblem& pr) {
  const int last = pr.num_chunks() - 1;
  auto boundary = [&](int c, StepKind k) {
    if (pr.boundaries.empty()) return 0.0;
    const BoundaryCost& b = pr.boundaries[static_cast<std::size_t>(c)];
    return k == StepKind::forward ? b.forward.value : b.backward.value;
  };
  if (s.kind == StepKind::forward) {
    if (s.chunk == 0) return {};
    return {true, {StepKind::forward, s.micro_batch, s.chunk - 1}, boundary(s.chunk - 1, StepKind::forward)};
  }
  if (s.chunk == last) return {true, {StepKind::forward, s.micro_batch, last}, 0.0};
  return {true, {StepKind::backward, s.micro_batch, s.chunk + 1}, boundary(s.chunk, StepKind::backward)};
}

// The transfer `s` starts when it ends: its forward's activation to the
// next chunk, its backward's gradient to the previous one; 0 at the ends.
double sent_transfer(const ScheduleStep& s, const PipelineProblem& pr) {
  if (pr.boundaries.empty()) return 0.0;
  if (s.kind == StepKind::forward)
    return s.chunk + 1 < pr.num_chunks() ? pr.boundaries[static_cast<std::size_t>(s.chunk)].forward.value : 0.0;
  return s.chunk > 0 ? pr.boundaries[static_cast<std::size_t>(s.chunk - 1)].backward.value : 0.0;
}

struct DeviceState {
  std::size_t pos = 0;  // next op of its order
  double free = 0.0;    // when its last op ended
  double busy = 0.0;
  int in_flight = 0;
  double in_flight_bytes = 0.0;
  int peak_in_flight = 0;
  double peak_bytes = 0.0;
};

}  // namespace

Result<PipelineResult> simulate(const PipelineProblem& pr, const DeviceOrders& orders, SimulateOptions options) {
  PLANNER_TRY_STATUS(validate(pr));
  const OpIndex index{pr.num_chunks(), pr.micro_batches};
  PLANNER_TRY_STATUS(check_orders(pr, orders, index));

  const std::size_t p = orders.size();
  std::vector<double> finish(index.size(), 0.0);
  std::vector<char> done(index.size(), 0);
  std::vector<int> waiter(index.size(), kNoWaiter);  // the one device parked on an op
  std::vector<DeviceState> dev(p);

  PipelineResult out;
  std::vector<std::size_t> offset(p + 1, 0);  // device d's events: [offset[d], offset[d+1])
  for (std::size_t d = 0; d < p; ++d) offset[d + 1] = offset[d] + orders[d].size();
  if (options.timeline) out.timeline.resize(offset[p]);

  // Worklist of devices that may be able to move. Each op is executed once
  // and wakes at most its one dependent device, so the loop is O(ops).
  std::vector<int> ready;
  ready.reserve(p);
  for (std::size_t d = p; d-- > 0;) ready.push_back(static_cast<int>(d));
  while (!ready.empty()) {
    const auto d = static_cast<std::size_t>(ready.back());
    ready.pop_back();
    DeviceState& st = dev[d];
    const std::vector<ScheduleStep>& order = orders[d];
    while (st.pos < order.size()) {
      const ScheduleStep& s = order[st.pos];
      double start = st.free;
      const Dependency dep = dependency_of(s, pr);
      if (dep.exists) {
        const std::size_t k = index(dep.op);
        if (!done[k]) {
          waiter[k] = static_cast<int>(d);  // unique: each op has one dependent
          break;
        }
        start = std::max(start, finish[k] + dep.transfer);
      }
      const ChunkCost& cost = pr.chunks[static_cast<std::size_t>(s.chunk)];
      const bool fwd = s.kind == StepKind::forward;
      const double duration = fwd ? cost.forward.value : cost.backward.value;
      const double end = start + duration;
      if (fwd) {  // activations are held from the forward's start ...
        ++st.in_flight;
        st.in_flight_bytes += cost.activation.value;
        st.peak_in_flight = std::max(st.peak_in_flight, st.in_flight);
        st.peak_bytes = std::max(st.peak_bytes, st.in_flight_bytes);
      } else {  // ... until the backward's end
        --st.in_flight;
        st.in_flight_bytes -= cost.activation.value;
      }
      st.busy += duration;
      st.free = end + (pr.blocking_transfers ? sent_transfer(s, pr) : 0.0);
      if (options.timeline)
        out.timeline[offset[d] + st.pos] = {static_cast<int>(d), s.kind, s.micro_batch, s.chunk, Seconds(start),
                                            Seconds(end)};
      const std::size_t self = index(s);
      finish[self] = end;
      done[self] = 1;
      if (waiter[self] != kNoWaiter) {
        ready.push_back(waiter[self]);
        waiter[self] = kNoWaiter;
      }
      ++st.pos;
    }
  }

  std::string stuck;
  int n_stuck = 0;
  for (std::size_t d = 0; d < p; ++d) {
    if (dev[d].pos == orders[d].size()) continue;
    const ScheduleStep& s = orders[d][dev[d].pos];
    if (n_stuck++ < 4)
      stuck += fmt::format("{}device {} at op {} ({}) waits for the {}", stuck.empty() ? "" : "; ", d, dev[d].pos,
                           describe(s), describe(dependency_of(s, pr).op));
  }
  if (n_stuck > 0)
    return make_error("pipeline: deadlock, {} device(s) can never continue: {}{}", n_stuck, stuck,
                      n_stuck > 4 ? "; ..." : "");

  double max_busy = 0.0;
  out.devices.resize(p);
  for (std::size_t d = 0; d < p; ++d) {
    DeviceReport& r = out.devices[d];
    r.busy = Seconds(dev[d].busy);
    r.last_finish = Seconds(dev[d].free);
    r.extra = pr.extra.empty() ? Seconds(0.0) : pr.extra[d];
    r.peak_in_flight = dev[d].peak_in_flight;
    r.peak_activation = Bytes(dev[d].peak_bytes);
    out.pipeline_time = std::max(out.pipeline_time, r.last_finish);
    out.step_time = std::max(out.step_time, r.last_finish + r.extra);
    max_busy = std::max(max_busy, dev[d].busy);
  }
  for (DeviceReport& r : out.devices) r.idle = out.pipeline_time - r.busy;
  out.bubble_fraction = max_busy > 0.0 ? (out.pipeline_time.value - max_busy) / max_busy : 0.0;
  return out;
}

Result<PipelineResult> simulate(const PipelineProblem& problem, SimulateOptions options) {
  PLANNER_TRY(DeviceOrders orders, device_orders(problem));
  return simulate(problem, orders, options);
}

double bubble_fraction_formula(Schedule schedule, int p, int m, int v) {
  const double scale = schedule == Schedule::interleaved ? static_cast<double>(v) : 1.0;
  return static_cast<double>(p - 1) / (scale * static_cast<double>(m));
}

Seconds bubble_formula(const PipelineProblem& pr) {
  std::vector<double> per_micro_batch(static_cast<std::size_t>(pr.stages), 0.0);
  for (std::size_t c = 0; c < pr.chunks.size(); ++c)
    per_micro_batch[c % per_micro_batch.size()] += pr.chunks[c].forward.value + pr.chunks[c].backward.value;
  const double ideal = pr.micro_batches * *std::max_element(per_micro_batch.begin(), per_micro_batch.end());
  return Seconds(ideal * bubble_fraction_formula(pr.schedule, pr.stages, pr.micro_batches, pr.virtual_stages));
}

std::string timeline_chart(const PipelineResult& result, Seconds per_char) {
  const double unit = per_char.value;
  const auto width = static_cast<std::size_t>(std::ceil(result.pipeline_time.value / unit));
  std::vector<std::string> rows(result.devices.size(), std::string(width, '.'));
  // Character j shows the op covering time (j + 0.5) * unit.
  auto first_char = [&](double t) { return static_cast<std::size_t>(std::max(0.0, std::ceil(t / unit - 0.5))); };
  for (const TimelineEvent& e : result.timeline) {
    const char mark = static_cast<char>((e.kind == StepKind::forward ? '0' : 'a') + e.micro_batch % 10);
    std::string& row = rows[static_cast<std::size_t>(e.device)];
    for (std::size_t j = first_char(e.start.value); j < std::min(width, first_char(e.end.value)); ++j) row[j] = mark;
  }
  const std::size_t label = fmt::formatted_size("{}", rows.empty() ? 0 : rows.size() - 1);
  std::string out;
  for (std::size_t d = 0; d < rows.size(); ++d) out += fmt::format("dev {:<{}}  {}\n", d, label, rows[d]);
  return out;
}

}  // namespace planner::sim
