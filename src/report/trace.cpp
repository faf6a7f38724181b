// Chrome trace-event JSON of a plan's timeline (docs/report.md): one process
// per pipeline rank, one thread per stream lane, "X" complete events in us.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "planner/report/report.hpp"

namespace planner::report {
namespace {

constexpr std::array<std::string_view, 4> kStreams{"compute", "tp", "pp", "dp"};
constexpr std::array<std::string_view, 4> kStreamLabels{"compute", "tp/cp collectives", "pp send/recv",
                                                        "dp/ZeRO collectives"};
constexpr int kLaneStride = 100;  // tid = stream index * 100 + lane

std::size_t stream_index(const std::string& s) {
  for (std::size_t i = 0; i < kStreams.size(); ++i)
    if (s == kStreams[i]) return i;
  return 0;
}

/// A JSON string literal (the names are ours, but the model path is not).
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

/// Microseconds, written in the shortest form that reads back exactly.
std::string micros(double seconds) { return fmt::format("{}", seconds * 1e6); }

}  // namespace

std::string stage_devices(const plan::Plan& p, int stage) {
  int size = 1, stride = 1;
  for (const auto& a : p.layout.mesh)
    if (a.name == "pp") size = a.size, stride = a.stride;
  std::vector<int> ranks;
  for (int d = 0; d < p.cluster.devices; ++d)
    if (size <= 1 || (d / stride) % size == stage) ranks.push_back(d);
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string span_label(const plan::TimelineSpan& s, bool show_chunk) {
  const std::string mb = s.micro_batch ? fmt::format("{}", *s.micro_batch) : std::string("?");
  const std::string ch = show_chunk && s.chunk ? fmt::format(" c{}", *s.chunk) : std::string();
  const std::string peer = s.peer ? fmt::format("{}", *s.peer) : std::string("?");
  const std::string_view k = s.kind;
  if (k == "forward") return "F" + mb + ch;
  if (k == "backward") return "B" + mb + ch;
  if (k == "recompute") return "R" + mb + ch;
  if (k == "tp_forward") return "tp F" + mb + ch;
  if (k == "tp_backward") return "tp B" + mb + ch;
  if (k == "send_activation") return "send act F" + mb + ch + " -> stage " + peer;
  if (k == "recv_activation") return "recv act F" + mb + ch + " <- stage " + peer;
  if (k == "send_gradient") return "send grad B" + mb + ch + " -> stage " + peer;
  if (k == "recv_gradient") return "recv grad B" + mb + ch + " <- stage " + peer;
  if (k == "zero_gather") return "ZeRO gather " + mb + ch;
  if (k == "zero_reduce_scatter") return "ZeRO reduce-scatter " + mb + ch;
  if (k == "dp_reduce") return "dp grad bucket";
  if (k == "dp_gather") return "dp param all-gather";
  if (k == "grad_sync") return "tp grad sync";
  return s.kind;  // optimizer, bubble
}

namespace {
Result<std::string> trace_impl(const plan::Plan& p, const std::vector<std::vector<MeasuredSpan>>* measured,
                               std::string_view mode) {
  const auto& tl = p.prediction.timeline;
  if (tl.empty())
    return make_error("the plan has no prediction.timeline (write it again with planner estimate --plan FILE -o NEW)");
  const bool show_chunk = p.layout.vp > 1;
  std::vector<std::string> events;
  for (const auto& st : tl) {
    const int pid = st.stage;
    events.push_back(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": {}}}}})", pid,
                                 quote(fmt::format("stage {} (devices {})", st.stage, stage_devices(p, st.stage)))));
    events.push_back(
        fmt::format(R"({{"name": "process_sort_index", "ph": "M", "pid": {}, "args": {{"sort_index": {}}}}})", pid, pid));
    // Lanes: a span goes to the first lane of its stream that is free.
    std::array<std::vector<double>, kStreams.size()> lane_end;
    std::vector<std::string> spans;
    std::vector<const plan::TimelineSpan*> order;
    for (const auto& s : st.spans) order.push_back(&s);
    std::stable_sort(order.begin(), order.end(), [](const plan::TimelineSpan* a, const plan::TimelineSpan* b) {
      const std::size_t sa = stream_index(a->stream), sb = stream_index(b->stream);
      if (sa != sb) return sa < sb;
      return a->start_s < b->start_s;
    });
    for (const plan::TimelineSpan* sp : order) {
      const plan::TimelineSpan& s = *sp;
      const std::size_t si = stream_index(s.stream);
      auto& ends = lane_end[si];
      std::size_t lane = 0;
      while (lane < ends.size() && ends[lane] > s.start_s) ++lane;
      if (lane == ends.size()) ends.push_back(s.end_s);
      else ends[lane] = s.end_s;
      const int tid = static_cast<int>(si) * kLaneStride + static_cast<int>(lane);
      std::string args = fmt::format(R"("kind": {})", quote(s.kind));
      if (s.micro_batch) args += fmt::format(R"(, "micro_batch": {})", *s.micro_batch);
      if (s.chunk) args += fmt::format(R"(, "chunk": {})", *s.chunk);
      if (s.peer) args += fmt::format(R"(, "peer_stage": {})", *s.peer);
      spans.push_back(fmt::format(
          R"({{"name": {}, "cat": {}, "ph": "X", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{{}}}}})",
          quote(span_label(s, show_chunk)), quote(s.stream), pid, tid, micros(s.start_s), micros(s.end_s - s.start_s),
          args));
    }
    for (std::size_t si = 0; si < kStreams.size(); ++si)
      for (std::size_t lane = 0; lane < lane_end[si].size(); ++lane) {
        const int tid = static_cast<int>(si) * kLaneStride + static_cast<int>(lane);
        const std::string name =
            lane == 0 ? std::string(kStreamLabels[si]) : fmt::format("{} #{}", kStreamLabels[si], lane + 1);
        events.push_back(fmt::format(R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": {}}}}})",
                                     pid, tid, quote(name)));
        events.push_back(fmt::format(
            R"({{"name": "thread_sort_index", "ph": "M", "pid": {}, "tid": {}, "args": {{"sort_index": {}}}}})", pid,
            tid, tid));
      }
    for (auto& s : spans) events.push_back(std::move(s));
  }
  if (measured) {
    for (std::size_t r = 0; r < measured->size(); ++r) {
      const int pid = 1000 + static_cast<int>(r);
      events.push_back(fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "args": {{"name": {}}}}})", pid,
                                   quote(fmt::format("measured rank {} ({})", r, mode))));
      events.push_back(fmt::format(
          R"({{"name": "process_sort_index", "ph": "M", "pid": {}, "args": {{"sort_index": {}}}}})", pid, pid));
      for (std::size_t si = 0; si < kStreams.size(); ++si)
        events.push_back(fmt::format(R"({{"name": "thread_name", "ph": "M", "pid": {}, "tid": {}, "args": {{"name": {}}}}})",
                                     pid, si * kLaneStride, quote(kStreamLabels[si])));
      for (const auto& s : (*measured)[r])
        events.push_back(fmt::format(
            R"({{"name": {}, "cat": {}, "ph": "X", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{"measured": true}}}})",
            quote(s.name), quote(s.stream), pid, stream_index(s.stream) * kLaneStride, micros(s.start_s),
            micros(s.end_s - s.start_s)));
    }
  }
  std::string out = "{\n  \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) out += "    " + events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  out += "  ],\n";
  out += "  \"displayTimeUnit\": \"ms\",\n";
  out += fmt::format(
      "  \"otherData\": {{\"format\": \"planner.trace/v1\", \"model\": {}, \"profile\": {}, \"devices\": {}, "
      "\"step_time_s\": {}}}\n",
      quote(p.model.path), quote(p.cluster.profile), p.cluster.devices, p.prediction.step_time_s);
  out += "}\n";
  return out;
}

}  // namespace

Result<std::string> chrome_trace(const plan::Plan& p) { return trace_impl(p, nullptr, ""); }

Result<std::string> chrome_trace_with_measured(const plan::Plan& p, const std::vector<std::vector<MeasuredSpan>>& ranks,
                                               std::string_view mode) {
  return trace_impl(p, &ranks, mode);
}

}  // namespace planner::report
