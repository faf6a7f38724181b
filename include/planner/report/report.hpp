#pragma once
/// Views of a plan file for people: a Chrome trace of the predicted step
/// (`--trace`, opens in Perfetto and chrome://tracing) and a self-contained
/// HTML report (`planner report`, docs/report.md).
///
/// Design note. Both read only the plan (plan::Plan): its layout, its
/// predicted memory per stage, its alternatives and its optional
/// `prediction.timeline`. Nothing here knows graphs or costs, so a report
/// can be made from any plan file, on any machine.
///
///   trace: one process per pipeline rank (its devices named), one thread per
///          stream (compute, tp, pp, dp; a stream whose spans overlap gets
///          extra lanes), one "X" complete event per span, times in us.
///   html:  inline CSS and SVG, no script, no external resource.
///
/// Architecture invariant: report depends on plan and core only.

#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/plan/plan.hpp"

namespace planner::report {

/// The devices of pipeline rank `stage` under the plan's mesh, as ranges:
/// "0-3", "0-1, 4-5". All devices when the mesh has no pp axis.
std::string stage_devices(const plan::Plan& p, int stage);

/// Display name of a span, e.g. "F3", "B3 c5" (chunk shown when vp > 1),
/// "send act F3 -> stage 1", "dp grad bucket".
std::string span_label(const plan::TimelineSpan& s, bool show_chunk);

/// Chrome trace-event JSON (one object, "traceEvents") of the plan's
/// timeline. Errors: the plan has no timeline.
Result<std::string> chrome_trace(const plan::Plan& p);

/// One measured interval of `planner run` on one rank, seconds from the
/// rank's step start; `stream` is "compute", "tp", "pp" or "dp".
struct MeasuredSpan {
  double start_s = 0, end_s = 0;
  std::string stream;
  std::string name;
};

/// chrome_trace() with the measured step of every rank beside the
/// prediction: process 1000 + r is "measured rank r (stage s)", one thread
/// per stream. `ranks[r]` are rank r's spans; `mode` names the run's mode.
Result<std::string> chrome_trace_with_measured(const plan::Plan& p, const std::vector<std::vector<MeasuredSpan>>& ranks,
                                               std::string_view mode);

/// The memory categories of the report, bottom to top: weights, grads,
/// optimizer, activations, temporaries, reserve, other.
std::vector<std::string> memory_categories();

/// The category of a plan memory item kind (docs/report.md): e.g.
/// gathered_weights -> weights, loss_buffer -> activations,
/// cuda_context -> reserve; an unknown kind -> other.
std::string memory_category(const std::string& kind);

/// The HTML report of a plan (self-contained, no script).
std::string html_report(const plan::Plan& p);

/// One layout `planner validate` ran: its predicted and measured step time.
struct ValidationPoint {
  std::string name;    ///< "best", "candidate 2", "baseline 1"
  std::string layout;  ///< shown in the point's tooltip
  double predicted_s = 0, measured_s = 0;
  bool baseline = false;
};

/// html_report(p) with a section "Predicted against measured" before the
/// layout: an SVG (id "validation") with one circle per point (data-name,
/// data-predicted-s, data-measured-s), both axes logarithmic over the same
/// range and the line measured = predicted, and a table of the points.
/// Points without a positive time on both axes are left out of the chart.
std::string html_report(const plan::Plan& p, const std::vector<ValidationPoint>& validation);

}  // namespace planner::report
