// The HTML report of a plan (docs/report.md): one self-contained file with
// inline CSS and SVG, no script and no external resource.
//
// The SVG carries its numbers: every timeline bar has data-stage, data-kind,
// data-mb, data-chunk, data-start-s and data-end-s; every memory segment
// data-stage, data-category and data-bytes, so tests (and readers) can check
// the drawing against the plan.

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "planner/report/report.hpp"

namespace planner::report {
namespace {

std::string esc(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / 1073741824.0); }

std::string secs(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

/// A coordinate in px, three decimals.
std::string px(double v) { return fmt::format("{:.3f}", v); }

/// Colour of a micro-batch's forward / backward bar (alternating shades).
std::string step_colour(std::string_view kind, int mb) {
  static constexpr std::string_view kForward[] = {"#4e79a7", "#6b93c4"};
  static constexpr std::string_view kBackward[] = {"#59a14f", "#7dbb73"};
  const auto i = static_cast<std::size_t>(mb % 2);
  return std::string(kind == "forward" ? kForward[i] : kBackward[i]);
}

std::string span_colour(std::string_view kind) {
  if (kind == "recompute") return "#b07aa1";
  if (kind == "optimizer") return "#f28e2b";
  if (kind == "bubble") return "#e8e8e8";
  if (kind == "tp_forward" || kind == "tp_backward" || kind == "grad_sync") return "#e15759";
  if (kind.starts_with("send") || kind.starts_with("recv")) return "#76b7b2";
  return "#edc948";  // dp and ZeRO
}

std::string category_colour(std::string_view c) {
  if (c == "weights") return "#4e79a7";
  if (c == "grads") return "#59a14f";
  if (c == "optimizer") return "#f28e2b";
  if (c == "activations") return "#e15759";
  if (c == "temporaries") return "#b07aa1";
  if (c == "reserve") return "#9c9c9c";
  return "#d4a6c8";
}

constexpr std::string_view kStyle = R"(body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#666;margin-bottom:12px}table{border-collapse:collapse;margin:6px 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f4f4f4}
td.n{text-align:right;font-variant-numeric:tabular-nums}.kpi{display:flex;gap:12px;flex-wrap:wrap}
.kpi div{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:130px}.kpi b{display:block;font-size:18px}
.bad{color:#b00020}.ok{color:#1b7f3b}svg text{font:11px system-ui,sans-serif;fill:#333}
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}
code{font-size:12px}details{margin:6px 0})";

void section_summary(const plan::Plan& p, std::string& h) {
  const auto& pr = p.prediction;
  double peak = 0;
  for (const auto& s : pr.stages) peak = std::max(peak, s.peak_bytes);
  h += "<div class=\"kpi\">";
  h += fmt::format("<div>step time<b>{}</b></div>", secs(pr.step_time_s));
  h += fmt::format("<div>MFU<b>{:.1f} %</b></div>", 100 * pr.mfu);
  h += fmt::format("<div>model TFLOP/s per device<b>{:.1f}</b></div>", pr.model_tflops_per_device);
  h += fmt::format("<div>fullest stage<b class=\"{}\">{}</b>of {}</div>", pr.fits ? "ok" : "bad", gib(peak),
                   gib(pr.capacity_bytes));
  if (pr.lower_bound_s > 0)
    h += fmt::format("<div>lower bound<b>{}</b>gap {:.1f} %</div>", secs(pr.lower_bound_s), 100 * pr.gap);
  h += "</div>\n";
  if (!pr.breakdown_s.empty()) {
    h += "<table><tr><th>breakdown (critical device)</th><th>seconds</th><th>share of step</th></tr>";
    for (const auto& [k, v] : pr.breakdown_s) {
      if (k == "data_parallel_total") continue;  // not part of the step's sum
      h += fmt::format("<tr><td>{}</td><td class=\"n\">{:.6g}</td><td class=\"n\">{:.1f} %</td></tr>", esc(k), v,
                       pr.step_time_s > 0 ? 100 * v / pr.step_time_s : 0.0);
    }
    h += "</table>\n";
  }
}

void section_layout(const plan::Plan& p, std::string& h) {
  const auto& l = p.layout;
  h += "<h2>Layout</h2>\n<table><tr><th>dp</th><th>tp</th><th>pp</th><th>cp</th><th>ep</th><th>vp</th>"
       "<th>micro-batch</th><th>micro-batches</th><th>global batch</th><th>schedule</th><th>ZeRO</th>"
       "<th>sequence parallel</th><th>recompute</th><th>framework</th></tr>";
  h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                   "<td>{}</td><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td></tr></table>\n",
                   l.dp, l.tp, l.pp, l.cp, l.ep, l.vp, p.training.micro_batch, p.training.micro_batches,
                   p.training.global_batch, esc(l.schedule), l.zero,
                   l.distributed_optimizer ? " (distributed optimizer)" : "", l.sequence_parallel ? "yes" : "no",
                   esc(p.training.recompute_modules.empty() ? p.training.recompute
                                                             : p.training.recompute + " (" + p.training.recompute_modules + ")"),
                   esc(p.training.framework));
  std::string mesh;
  for (const auto& a : l.mesh)
    mesh += fmt::format("{}{}={} <small>(stride {})</small>", mesh.empty() ? "" : " &times; ", esc(a.name), a.size,
                        a.stride);
  h += fmt::format("<p>Mesh: {} over {} devices, {} per node. Pipeline ranks hold devices: ", mesh, p.cluster.devices,
                   p.cluster.devices_per_node);
  for (int r = 0; r < l.pp; ++r)
    h += fmt::format("{}stage {}: {}", r ? "; " : "", r, esc(stage_devices(p, r)));
  h += ".</p>\n<table><tr><th>chunk</th><th>rank</th><th>layers</th><th>holds</th><th>ops</th></tr>";
  for (const auto& c : l.chunks) {
    const std::string layers =
        c.last_layer < c.first_layer ? std::string("-") : fmt::format("{}-{}", c.first_layer, c.last_layer);
    std::string holds = c.embedding ? "embedding" : "";
    if (c.head) holds += holds.empty() ? "head, loss" : ", head, loss";
    h += fmt::format("<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
                     c.index, c.pipeline_rank, layers, holds, c.ops.size());
  }
  h += "</table>\n";
  // Strategies by family and mesh assignment.
  std::map<std::pair<std::string, std::string>, std::pair<int, std::size_t>> summary;
  for (const auto& s : l.strategies) {
    auto& e = summary[{s.family, s.assignment.empty() ? std::string("replicated") : s.assignment}];
    e.first += 1;
    e.second += s.instances.size();
  }
  h += "<p>Per-op strategies (units share one strategy across repeated layers):</p>"
       "<table><tr><th>family</th><th>split (mesh axis : letter)</th><th>units</th><th>op instances</th></tr>";
  for (const auto& [k, v] : summary)
    h += fmt::format("<tr><td>{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                     esc(k.first), esc(k.second), v.first, v.second);
  h += fmt::format("</table>\n<details><summary>All {} units</summary><table><tr><th>unit</th><th>copies</th>"
                   "<th>family</th><th>strategy</th><th>assignment</th><th>collectives</th></tr>",
                   l.strategies.size());
  for (const auto& s : l.strategies) {
    std::string comms;
    for (const auto& c : s.collectives)
      comms += fmt::format("{}{} {} x{}{}", comms.empty() ? "" : ", ", esc(c.kind), esc(c.axis), c.count,
                           c.per_step ? " /step" : (c.backward ? " bwd" : ""));
    h += fmt::format("<tr><td><code>{}</code></td><td class=\"n\">{}</td><td>{}</td><td><code>{}</code></td>"
                     "<td><code>{}</code></td><td>{}</td></tr>",
                     esc(s.unit), s.instances.size(), esc(s.family), esc(s.strategy), esc(s.assignment), comms);
  }
  h += "</table></details>\n";
}

/// A time-axis label in the unit that suits the whole step: "0", "5 ms", "1.5 s".
std::string tick_label(double t, double step) {
  if (t == 0) return "0";
  if (step >= 1) return fmt::format("{:g} s", t);
  if (step >= 1e-3) return fmt::format("{:g} ms", std::round(t * 1e9) / 1e6);
  return fmt::format("{:g} us", std::round(t * 1e12) / 1e6);
}

/// Tick spacing: 1, 2 or 5 x 10^k giving at most ~10 ticks.
double tick_step(double span) {
  if (!(span > 0)) return 1;
  const double raw = span / 10;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * mag >= raw) return f * mag;
  return 10 * mag;
}

void section_timeline(const plan::Plan& p, std::string& h) {
  const auto& tl = p.prediction.timeline;
  h += "<h2>Pipeline timeline (one step)</h2>\n";
  if (tl.empty()) {
    h += "<p>This plan has no <code>prediction.timeline</code>. Write it again with "
         "<code>planner estimate --plan PLAN -o NEW</code> to add one.</p>\n";
    return;
  }
  const double step = p.prediction.step_time_s > 0 ? p.prediction.step_time_s : 1;
  constexpr double kLeft = 170, kWidth = 1150, kCompute = 22, kLane = 6, kGap = 14, kTop = 10;
  const double row = kCompute + 3 * (kLane + 1) + kGap;
  const double height = kTop + row * static_cast<double>(tl.size()) + 24;
  const bool show_chunk = p.layout.vp > 1;
  auto x = [&](double t) { return kLeft + t / step * kWidth; };
  h += fmt::format("<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                   "data-step-s=\"{}\">\n",
                   kLeft + kWidth + 20, px(height), step);
  const double tick = tick_step(step);
  for (int i = 0; i * tick <= step * (1 + 1e-9); ++i) {
    const double t = i * tick;
    h += fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#ddd\"/>"
                     "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                     px(x(t)), px(kTop), px(height - 20), px(height - 6), esc(tick_label(t, step)));
  }
  for (std::size_t i = 0; i < tl.size(); ++i) {
    const auto& st = tl[i];
    const double y0 = kTop + row * static_cast<double>(i);
    h += fmt::format("<text x=\"4\" y=\"{}\">stage {}</text><text x=\"4\" y=\"{}\" fill=\"#777\">devices {}</text>\n",
                     px(y0 + 11), st.stage, px(y0 + 24), esc(stage_devices(p, st.stage)));
    for (const auto& s : st.spans) {
      const double x0 = x(s.start_s), w = std::max(0.0, x(s.end_s) - x0);
      double y = y0, hh = kCompute;
      if (s.stream != "compute") {
        const int lane = s.stream == "tp" ? 0 : s.stream == "pp" ? 1 : 2;
        y = y0 + kCompute + 1 + lane * (kLane + 1);
        hh = kLane;
      }
      const bool is_step = s.kind == "forward" || s.kind == "backward";
      const std::string cls = is_step ? "step" : (s.kind == "bubble" ? "bubble" : "span");
      const std::string fill = is_step ? step_colour(s.kind, s.micro_batch.value_or(0)) : span_colour(s.kind);
      std::string data = fmt::format(" data-stage=\"{}\" data-stream=\"{}\" data-kind=\"{}\"", st.stage, esc(s.stream),
                                     esc(s.kind));
      if (s.micro_batch) data += fmt::format(" data-mb=\"{}\"", *s.micro_batch);
      if (s.chunk) data += fmt::format(" data-chunk=\"{}\"", *s.chunk);
      data += fmt::format(" data-start-s=\"{}\" data-end-s=\"{}\"", s.start_s, s.end_s);
      h += fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}>"
                       "<title>stage {}: {} {} - {}</title></rect>",
                       cls, px(x0), px(y), px(w), px(hh), fill, data, st.stage, esc(span_label(s, show_chunk)),
                       esc(secs(s.start_s)), esc(secs(s.end_s)));
      if (is_step && s.micro_batch && w >= 14)
        h += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#fff\" style=\"fill:#fff\">{}</text>",
                         px(x0 + w / 2), px(y0 + 15), *s.micro_batch);
      h += '\n';
    }
  }
  h += "</svg>\n<p class=\"legend\">";
  const std::pair<std::string_view, std::string> legend[] = {
      {"forward", step_colour("forward", 0)}, {"backward", step_colour("backward", 0)},
      {"recompute", span_colour("recompute")}, {"optimizer", span_colour("optimizer")},
      {"bubble (idle)", span_colour("bubble")}, {"tp/cp collectives (thin lane 1)", span_colour("tp_forward")},
      {"pp send/recv (lane 2)", span_colour("send_activation")}, {"dp and ZeRO collectives (lane 3)", span_colour("dp_reduce")}};
  for (const auto& [name, colour] : legend)
    h += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", colour, name);
  h += "</p><p>Numbers in the bars are micro-batch ids. Every device of a stage (its data-, context- and "
       "tensor-parallel replicas) runs the same timeline under the model.</p>\n";
}

void section_memory(const plan::Plan& p, std::string& h) {
  const auto& pr = p.prediction;
  h += "<h2>Memory per device</h2>\n";
  if (pr.stages.empty()) {
    h += "<p>The plan records no memory per stage.</p>\n";
    return;
  }
  double top = pr.capacity_bytes;
  for (const auto& s : pr.stages) top = std::max(top, s.peak_bytes);
  if (!(top > 0)) top = 1;
  constexpr double kLeft = 70, kBar = 46, kGap = 28, kHeight = 320, kTop = 14;
  const double width = kLeft + static_cast<double>(pr.stages.size()) * (kBar + kGap) + 150;
  const double scale = kHeight / top;  // px per byte
  const double base = kTop + kHeight;
  h += fmt::format("<svg id=\"memory\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                   "data-px-per-byte=\"{}\">\n",
                   px(width), px(base + 40), scale);
  const double tick = tick_step(top / 1073741824.0) * 1073741824.0;
  for (int i = 0; i * tick <= top * (1 + 1e-9); ++i) {
    const double y = base - i * tick * scale;
    h += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#eee\"/>"
                     "<text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5}</text>\n",
                     px(kLeft - 4), px(width - 150), px(y), px(kLeft - 8), px(y + 4), esc(gib(i * tick)));
  }
  const auto categories = memory_categories();
  for (std::size_t i = 0; i < pr.stages.size(); ++i) {
    const auto& s = pr.stages[i];
    const double x0 = kLeft + static_cast<double>(i) * (kBar + kGap) + kGap / 2;
    std::map<std::string, double> by;
    for (const auto& it : s.items) by[memory_category(it.kind)] += it.bytes;
    if (s.items.empty()) by["other"] = s.peak_bytes;
    // Each segment's top edge is rounded, the next one starts there, so the
    // heights add up to the peak's height.
    double acc = 0;
    for (const auto& c : categories) {
      const auto it = by.find(c);
      if (it == by.end() || !(it->second > 0)) continue;
      const double y_bottom = base - acc * scale;
      acc += it->second;
      const double y_top = base - acc * scale;
      h += fmt::format("<rect class=\"mem\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
                       "data-stage=\"{}\" data-category=\"{}\" data-bytes=\"{}\"><title>stage {}: {} {}</title></rect>\n",
                       px(x0), px(y_top), px(kBar), px(y_bottom - y_top), category_colour(c), s.stage, c, it->second,
                       s.stage, c, esc(gib(it->second)));
    }
    h += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" data-stage=\"{}\" data-peak-bytes=\"{}\">{}</text>"
                     "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">stage {}</text>\n",
                     px(x0 + kBar / 2), px(base - s.peak_bytes * scale - 4), s.stage, s.peak_bytes,
                     esc(fmt::format("{:.1f}", s.peak_bytes / 1073741824.0)), px(x0 + kBar / 2), px(base + 16), s.stage);
  }
  const double cy = base - pr.capacity_bytes * scale;
  h += fmt::format("<line class=\"capacity\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#b00020\" "
                   "stroke-dasharray=\"6 4\" data-bytes=\"{3}\"/><text x=\"{4}\" y=\"{5}\" fill=\"#b00020\" "
                   "style=\"fill:#b00020\">capacity {6}</text>\n",
                   px(kLeft - 4), px(width - 150), px(cy), pr.capacity_bytes, px(width - 146), px(cy + 4),
                   esc(gib(pr.capacity_bytes)));
  h += "</svg>\n<p class=\"legend\">";
  for (const auto& c : categories) h += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", category_colour(c), c);
  h += "</p>\n<table><tr><th>stage</th><th>peak</th><th>fits</th><th>micro-batches in flight</th>"
       "<th>largest items</th></tr>";
  for (const auto& s : pr.stages) {
    std::string items;
    for (std::size_t k = 0; k < s.items.size() && k < 4; ++k)
      items += fmt::format("{}{} {}", k ? ", " : "", esc(s.items[k].kind), gib(s.items[k].bytes));
    h += fmt::format("<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"{}\">{}</td><td class=\"n\">{:g}</td>"
                     "<td>{}</td></tr>",
                     s.stage, gib(s.peak_bytes), s.fits ? "ok" : "bad", s.fits ? "yes" : "no",
                     s.micro_batches_in_flight, items);
  }
  h += "</table>\n";
}

void section_alternatives(const plan::Plan& p, std::string& h) {
  const auto& pr = p.prediction;
  h += "<h2>Alternatives</h2>\n";
  if (pr.alternatives.empty()) {
    h += fmt::format("<p>None recorded ({}).</p>\n", p.producer.command == "search"
                                                        ? "the search kept no runner-up"
                                                        : "a plan written by estimate scores one layout");
    return;
  }
  double top = pr.step_time_s;
  for (const auto& a : pr.alternatives) top = std::max(top, a.step_time_s);
  if (!(top > 0)) top = 1;
  h += "<table><tr><th>#</th><th>layout</th><th>step time</th><th></th><th>vs chosen</th><th>fits</th>"
       "<th>why it lost</th></tr>";
  auto bar = [&](double s, std::string_view colour) {
    return fmt::format("<svg width=\"160\" height=\"12\"><rect class=\"alt\" x=\"0\" y=\"1\" width=\"{}\" "
                       "height=\"10\" fill=\"{}\" data-step-s=\"{}\"/></svg>",
                       px(160 * s / top), colour, s);
  };
  h += fmt::format("<tr><td>chosen</td><td><b>this plan</b></td><td class=\"n\">{}</td><td>{}</td><td></td>"
                   "<td class=\"{}\">{}</td><td></td></tr>",
                   secs(pr.step_time_s), bar(pr.step_time_s, "#4e79a7"), pr.fits ? "ok" : "bad",
                   pr.fits ? "yes" : "no");
  for (std::size_t i = 0; i < pr.alternatives.size(); ++i) {
    const auto& a = pr.alternatives[i];
    const double pct = pr.step_time_s > 0 ? 100 * (a.step_time_s / pr.step_time_s - 1) : 0;
    h += fmt::format("<tr><td class=\"n\">{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td>{}</td>"
                     "<td class=\"n\">{:+.1f} %</td><td class=\"{}\">{}</td><td>{}</td></tr>",
                     i + 2, esc(a.layout), secs(a.step_time_s), bar(a.step_time_s, "#9c9c9c"), pct,
                     a.fits ? "ok" : "bad", a.fits ? "yes" : "no", esc(a.why));
  }
  h += "</table>\n";
}

}  // namespace

std::vector<std::string> memory_categories() {
  return {"weights", "grads", "optimizer", "activations", "temporaries", "reserve", "other"};
}

std::string memory_category(const std::string& kind) {
  if (kind == "weights" || kind == "gathered_weights") return "weights";
  if (kind == "gradients") return "grads";
  if (kind == "optimizer_states") return "optimizer";
  if (kind == "activations" || kind == "loss_buffer" || kind == "recompute_working_set") return "activations";
  if (kind == "temporary") return "temporaries";
  if (kind == "cuda_context" || kind == "communicator" || kind == "fragmentation") return "reserve";
  return "other";
}

namespace {

// planner validate's points: measured against predicted on log-log axes
// of one range, so the diagonal is "as predicted" and a constant factor
// off is a parallel line.
void section_validation(const std::vector<ValidationPoint>& pts, std::string& h) {
  std::vector<const ValidationPoint*> shown;
  for (const auto& v : pts)
    if (v.predicted_s > 0 && v.measured_s > 0) shown.push_back(&v);
  h += "<h2>Predicted against measured (planner validate)</h2>\n";
  if (shown.empty()) {
    h += "<p>No layout was measured.</p>\n";
    return;
  }
  double lo = shown.front()->predicted_s, hi = lo;
  for (const auto* v : shown) {
    lo = std::min({lo, v->predicted_s, v->measured_s});
    hi = std::max({hi, v->predicted_s, v->measured_s});
  }
  const double llo = std::log10(lo) - 0.15, lhi = std::log10(hi) + 0.15;
  constexpr double kLeft = 70, kTop = 10, kSize = 320;
  auto at = [&](double t) { return (std::log10(t) - llo) / (lhi - llo) * kSize; };
  h += fmt::format("<svg id=\"validation\" width=\"{}\" height=\"{}\" role=\"img\">\n", px(kLeft + kSize + 20),
                   px(kTop + kSize + 40));
  h += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#ccc\"/>\n", px(kLeft),
                   px(kTop), px(kSize), px(kSize));
  h += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n",
                   px(kLeft), px(kTop + kSize), px(kLeft + kSize), px(kTop));
  for (const double t : {lo, std::sqrt(lo * hi), hi}) {
    h += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(kLeft + at(t)),
                     px(kTop + kSize + 14), esc(secs(t)));
    h += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", px(kLeft - 4),
                     px(kTop + kSize - at(t) + 4), esc(secs(t)));
  }
  h += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">predicted step time (dashed: measured = "
                   "predicted; log scales)</text>\n",
                   px(kLeft + kSize / 2), px(kTop + kSize + 32));
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const auto& v = *shown[i];
    const double x = kLeft + at(v.predicted_s), y = kTop + kSize - at(v.measured_s);
    h += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\" data-name=\"{}\" data-predicted-s=\"{:.9g}\" "
                     "data-measured-s=\"{:.9g}\"><title>{}: {} predicted {}, measured {}</title></circle>\n",
                     px(x), px(y), v.baseline ? "#f28e2b" : "#4e79a7", esc(v.name), v.predicted_s, v.measured_s,
                     esc(v.name), esc(v.layout), esc(secs(v.predicted_s)), esc(secs(v.measured_s)));
    h += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", px(x + 7), px(y + 4), esc(v.name));
  }
  h += "</svg>\n<div class=\"legend\"><span><i style=\"background:#4e79a7\"></i>candidate</span>"
       "<span><i style=\"background:#f28e2b\"></i>baseline</span></div>\n";
  h += "<table><tr><th>row</th><th>predicted</th><th>measured</th><th>layout</th></tr>\n";
  for (const auto& v : pts)
    h += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td><code>{}</code></td></tr>\n",
                     esc(v.name), v.predicted_s > 0 ? esc(secs(v.predicted_s)) : "-",
                     v.measured_s > 0 ? esc(secs(v.measured_s)) : "-", esc(v.layout));
  h += "</table>\n";
}

}  // namespace

std::string html_report(const plan::Plan& p) { return html_report(p, {}); }

std::string html_report(const plan::Plan& p, const std::vector<ValidationPoint>& validation) {
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  h += fmt::format("<title>planner report: {}</title>\n<style>{}</style></head>\n<body>\n", esc(p.model.path), kStyle);
  h += fmt::format("<h1>planner report: {}</h1>\n", esc(p.model.path));
  h += fmt::format("<div class=\"sub\">{} devices of {} &middot; {:.4g} B parameters &middot; plan written by "
                   "<code>planner {}</code>{}</div>\n",
                   p.cluster.devices, esc(p.cluster.profile), static_cast<double>(p.model.parameters) / 1e9,
                   esc(p.producer.command),
                   p.producer.layouts_scored > 0 ? fmt::format(" after scoring {} layouts", p.producer.layouts_scored)
                                                 : std::string());
  section_summary(p, h);
  section_timeline(p, h);
  section_memory(p, h);
  section_alternatives(p, h);
  if (!validation.empty()) section_validation(validation, h);
  section_layout(p, h);
  h += "</body></html>\n";
  return h;
}

}  // namespace planner::report
