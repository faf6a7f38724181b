// The spans of one step, laid out from the simulated pipeline and the
// parts estimate() kept. Design note: include/planner/estimate/timeline.hpp.

#include "planner/estimate/timeline.hpp"

#include <algorithm>
#include <cstddef>
#include <tuple>

#include <fmt/format.h>

#include "planner/sim/pipeline.hpp"

namespace planner::estimate {

std::string_view stream_name(Stream s) {
  switch (s) {
    case Stream::compute: return "compute";
    case Stream::tp: return "tp";
    case Stream::pp: return "pp";
    case Stream::dp: return "dp";
  }
  return "compute";
}

std::string_view span_kind_name(SpanKind k) {
  switch (k) {
    case SpanKind::forward: return "forward";
    case SpanKind::recompute: return "recompute";
    case SpanKind::backward: return "backward";
    case SpanKind::optimizer: return "optimizer";
    case SpanKind::bubble: return "bubble";
    case SpanKind::tp_forward: return "tp_forward";
    case SpanKind::tp_backward: return "tp_backward";
    case SpanKind::grad_sync: return "grad_sync";
    case SpanKind::send_activation: return "send_activation";
    case SpanKind::recv_activation: return "recv_activation";
    case SpanKind::send_gradient: return "send_gradient";
    case SpanKind::recv_gradient: return "recv_gradient";
    case SpanKind::zero_gather: return "zero_gather";
    case SpanKind::zero_reduce_scatter: return "zero_reduce_scatter";
    case SpanKind::dp_reduce: return "dp_reduce";
    case SpanKind::dp_gather: return "dp_gather";
  }
  return "forward";
}

namespace {

class Builder {
 public:
  explicit Builder(Seconds step) : step_(step) {}

  /// Adds [start, end) clamped to [0, step]; empty spans only when `always`.
  void add(int stage, Stream stream, SpanKind kind, Seconds start, Seconds end, std::optional<int> mb = {},
           std::optional<int> chunk = {}, std::optional<int> peer = {}, bool always = false) {
    start = std::clamp(start, Seconds(0), step_);
    end = std::clamp(end, start, step_);
    if (!(end > start) && !always) return;
    spans.push_back(Span{stage, stream, kind, mb, chunk, peer, start, end});
  }

  std::vector<Span> spans;

 private:
  Seconds step_;
};

}  // namespace

Result<StepTimeline> step_timeline(const StepParts& parts, const sim::PipelineResult& res) {
  const sim::PipelineProblem& pr = parts.problem;
  if (parts.chunks.size() != static_cast<std::size_t>(pr.num_chunks()) ||
      parts.ranks.size() != static_cast<std::size_t>(pr.stages))
    return make_error("timeline: {} chunk parts and {} rank tails for {} chunks on {} ranks", parts.chunks.size(),
                      parts.ranks.size(), pr.num_chunks(), pr.stages);
  const std::size_t ops = 2 * static_cast<std::size_t>(pr.num_chunks()) * static_cast<std::size_t>(pr.micro_batches);
  if (res.devices.size() != static_cast<std::size_t>(pr.stages) || res.timeline.size() != ops)
    return make_error("timeline: the simulation holds {} events on {} ranks, not {} on {} (simulated without events?)",
                      res.timeline.size(), res.devices.size(), ops, pr.stages);
  StepTimeline out;
  out.step_time = res.step_time;
  out.stages = pr.stages;
  out.orders.resize(static_cast<std::size_t>(pr.stages));
  for (const sim::TimelineEvent& ev : res.timeline)
    out.orders[static_cast<std::size_t>(ev.device)].push_back({ev.kind, ev.micro_batch, ev.chunk});
  Builder b(res.step_time);
  const int last_chunk = pr.num_chunks() - 1;

  // Per rank: the windows its ops and its tail occupy, for the bubbles.
  std::vector<std::vector<std::pair<Seconds, Seconds>>> busy(static_cast<std::size_t>(pr.stages));
  for (const sim::TimelineEvent& ev : res.timeline) {
    const int r = ev.device, c = ev.chunk, i = ev.micro_batch;
    const ChunkParts& cp = parts.chunks[static_cast<std::size_t>(c)];
    busy[static_cast<std::size_t>(r)].emplace_back(ev.start, ev.end);
    if (ev.kind == sim::StepKind::forward) {
      const Seconds s = ev.start + cp.forward_wait;
      b.add(r, Stream::compute, SpanKind::forward, s, s + cp.forward, i, c, {}, true);
      b.add(r, Stream::tp, SpanKind::tp_forward, s + cp.forward, s + cp.forward + cp.forward_comm, i, c);
      b.add(r, Stream::dp, SpanKind::zero_gather, ev.start, ev.start + cp.forward_gather, i, c);
      if (c < last_chunk && !pr.boundaries.empty()) {
        const Seconds t = pr.boundaries[static_cast<std::size_t>(c)].forward;
        const int to = (c + 1) % pr.stages;
        b.add(r, Stream::pp, SpanKind::send_activation, ev.end, ev.end + t, i, c, to);
        b.add(to, Stream::pp, SpanKind::recv_activation, ev.end, ev.end + t, i, c + 1, r);
      }
    } else {
      const Seconds s = ev.start + cp.recompute;
      b.add(r, Stream::compute, SpanKind::recompute, ev.start, s, i, c);
      // The gradient accumulation passes run on the compute stream right
      // after the backward kernels; they are drawn as part of the backward.
      b.add(r, Stream::compute, SpanKind::backward, s, s + cp.backward + cp.grad_accumulation, i, c, {}, true);
      b.add(r, Stream::tp, SpanKind::tp_backward, s + cp.backward + cp.grad_accumulation,
            s + cp.backward + cp.grad_accumulation + cp.backward_comm, i, c);
      b.add(r, Stream::dp, SpanKind::zero_gather, ev.start, ev.start + cp.backward_gather, i, c);
      b.add(r, Stream::dp, SpanKind::zero_reduce_scatter, ev.end - cp.reduce_scatter, ev.end, i, c);
      if (c > 0 && !pr.boundaries.empty()) {
        const Seconds t = pr.boundaries[static_cast<std::size_t>(c - 1)].backward;
        const int to = (c - 1) % pr.stages;
        b.add(r, Stream::pp, SpanKind::send_gradient, ev.end, ev.end + t, i, c, to);
        b.add(to, Stream::pp, SpanKind::recv_gradient, ev.end, ev.end + t, i, c - 1, r);
      }
    }
  }

  for (int r = 0; r < pr.stages; ++r) {
    const RankTail& t = parts.ranks[static_cast<std::size_t>(r)];
    const sim::DeviceReport& dev = res.devices[static_cast<std::size_t>(r)];
    const Seconds lf = dev.last_finish, end = dev.last_finish + dev.extra;
    // Equal buckets, the last ending where the exposed reduction ends.
    const Seconds reduce_end = lf + t.dp_reduce_exposed;
    const int n = std::max(1, t.dp_buckets);
    const Seconds bucket = t.dp_reduce / static_cast<double>(n);
    for (int k = 0; k < n; ++k)
      b.add(r, Stream::dp, SpanKind::dp_reduce, reduce_end - bucket * static_cast<double>(n - k),
            reduce_end - bucket * static_cast<double>(n - k - 1));
    b.add(r, Stream::dp, SpanKind::dp_gather, reduce_end, reduce_end + t.dp_gather_exposed);
    const Seconds sync = reduce_end + t.dp_gather_exposed;
    b.add(r, Stream::tp, SpanKind::grad_sync, sync, sync + t.grad_sync);
    b.add(r, Stream::compute, SpanKind::optimizer, end - t.optimizer, end);
    auto& w = busy[static_cast<std::size_t>(r)];
    w.emplace_back(lf, end);
    std::sort(w.begin(), w.end());
    Seconds at(0);
    for (const auto& [s, e] : w) {
      b.add(r, Stream::compute, SpanKind::bubble, at, s);
      at = std::max(at, e);
    }
    b.add(r, Stream::compute, SpanKind::bubble, at, res.step_time);
  }

  out.spans = std::move(b.spans);
  std::sort(out.spans.begin(), out.spans.end(), [](const Span& x, const Span& y) {
    return std::tuple(x.stage, x.stream, x.start, x.end, x.kind, x.chunk, x.micro_batch) <
           std::tuple(y.stage, y.stream, y.start, y.end, y.kind, y.chunk, y.micro_batch);
  });
  return out;
}

}  // namespace planner::estimate
