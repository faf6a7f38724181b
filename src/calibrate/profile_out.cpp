// Calibrated profiles as JSON text (profile_out.hpp). The CPU profile is
// written whole; the nccl-tests profile edits the base profile's JSON so
// that every number it does not refit keeps its own source verbatim.

#include "planner/calibrate/profile_out.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/calibrate/fit.hpp"
#include "planner/cluster/collective.hpp"
#include "profile_json.hpp"

namespace planner::calibrate {
namespace detail {

using core::Collective;

/// `v` to `digits` significant digits (so the file stays readable).
double sig(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::abs(v)))));
  return std::round(v * scale) / scale;
}

/// `v` > 0 rounded down to 4 significant digits (a latency rounded up could
/// make a measured time unreachable).
double sig_down(double v) {
  if (!(v > 0) || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 3 - static_cast<int>(std::floor(std::log10(v))));
  return std::floor(v * scale * (1 + 1e-12)) / scale;
}

/// An efficiency: 4 significant digits, kept inside (0, 1].
double frac(double v) { return std::clamp(sig(v), 1e-6, 1.0); }

json sourced(double v, const std::string& source) { return json{{"value", v}, {"source", source}}; }

json table(std::string_view x, const std::string& source, const Rows& rows) {
  json r = json::array();
  for (const auto& row : rows) r.push_back(json::array({row.x, frac(row.y)}));
  return json{{"x", x}, {"source", source}, {"rows", r}};
}

/// The rows as written (rounded), for the in-memory profile used in checks.
cluster::EfficiencyTable rounded(const Rows& rows, std::string x) {
  cluster::EfficiencyTable t;
  t.x_name = std::move(x);
  for (const auto& r : rows) t.rows.push_back({r.x, frac(r.y)});
  return t;
}

std::string item(const Provenance& p, std::string_view key) {
  for (const auto& [k, v] : p.items)
    if (k == key) return v;
  return "";
}

json provenance_json(const Provenance& p) {
  json out = json::object();
  for (const auto& [k, v] : p.items) out[k] = v;
  return out;
}

Status check_name(const std::string& name) {
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos)
    return make_error("profile name '{}' (the output file's stem) may use only lowercase letters, digits, '.', '_' "
                      "and '-'",
                      name);
  return Status::success();
}

std::string us(Seconds t) { return fmt::format("{:.3g} us", t.value * 1e6); }

std::vector<Sample> samples_of(const NcclSection& s) {
  std::vector<Sample> out;
  for (const auto& r : s.rows) out.push_back({r.size.value, r.time});
  return out;
}

/// Largest |model / measured - 1| of `kind` at `where` on `p`.
Result<double> model_error(const cluster::ClusterProfile& p, Collective kind, cluster::Placement where,
                           std::span<const Sample> samples) {
  double worst = 0;
  for (const Sample& s : samples) {
    PLANNER_TRY(cluster::CollectiveCost c, cluster::collective_time(p, kind, Bytes(s.x), where));
    worst = std::max(worst, std::abs(c.time.value / s.time.value - 1));
  }
  return worst;
}

/// The collective tables of one level from timed samples on `where` that
/// cross that level only: per-collective latency from a line fit, the
/// level bandwidth B = best bus bandwidth of any collective, and the tables
/// solved against the cost model. `level` in `net` is rewritten.

/// Levels the placement crosses (each with more than one rank per
/// sub-collective), as cluster/collective.cpp stages them.
int stages_crossed(const cluster::Interconnect& net, cluster::Placement where) {
  int stages = 0, inner = 1;
  for (const auto& l : net.levels) {
    if (l.inter_node) continue;
    const int r = std::min(l.devices_per_group, where.ranks_per_node);
    if (r / inner > 1) ++stages;
    inner = std::max(inner, r);
  }
  return stages + (where.ranks / where.ranks_per_node > 1 ? 1 : 0);
}

Result<LevelTables> fit_level(cluster::Interconnect& net, std::size_t level, cluster::Placement where,
                              const std::map<Collective, std::vector<Sample>>& runs) {
  LevelTables out;
  cluster::Level& l = net.levels[level];
  l.tree.reset();
  l.nvls.reset();
  out.single_stage = stages_crossed(net, where) == 1;
  if (out.single_stage) {
    // One level: alpha per collective from the line fit, B the best bus
    // bandwidth after latency, so that every table is <= 1.
    double best = 0;
    for (const auto& [kind, samples] : runs) {
      PLANNER_TRY(Seconds a, fit_latency(kind, where.ranks, samples));
      out.latency[kind] = a;
      const double b = best_bus_bandwidth(kind, where.ranks, a, samples);
      if (b > best) {
        best = b;
        out.bandwidth_from = std::string(core::to_string(kind));
      }
    }
    out.bandwidth = BytesPerSecond(sig(best, 6));
    // B is set by the bandwidth-bound samples; a latency-bound sample of a
    // collective may then need e > 1. Lower that collective's latency so
    // that e = 1 reaches every sample: alpha <= (t - factor*S/B) / steps.
    for (auto& [kind, a] : out.latency) {
      const CollectiveShape sh = collective_shape(kind, where.ranks);
      for (const Sample& s : runs.at(kind))
        a = Seconds(std::max(0.0, std::min(a.value, (s.time.value - sh.factor * s.x / best) / sh.steps)));
    }
    if (l.inter_node)
      l.nic_bandwidth = BytesPerSecond(out.bandwidth.value * where.ranks_per_node /
                                       std::min(where.ranks_per_node, l.nics_per_node));
    else
      l.bandwidth = out.bandwidth;
    for (const auto& [kind, a] : out.latency)
      set_table(l, kind, cluster::EfficiencyTable{{{1, 1}}, "message_bytes"}, Seconds(sig_down(a.value * 1e6) * 1e-6));
  }
  // Several levels: the level keeps its bandwidth and latency (the inner
  // levels' share of each time is theirs), only the tables are solved.
  for (const auto& [kind, samples] : runs) {
    PLANNER_TRY(SolvedTable t, solve_table(net, level, kind, where, samples));
    set_table(l, kind, rounded(t.rows, "message_bytes"),
              out.single_stage ? std::optional<Seconds>(l.latency_for(kind)) : std::nullopt);
    out.tables[kind] = std::move(t);
  }
  return out;
}

std::string kernel_source(const std::string& by, std::string_view what) { return fmt::format("{}: {}", by, what); }

Result<json> one_host_interconnect(const HostLevelText& text, const std::string& by, int ranks, double peak_Bps,
                                   const std::map<Collective, std::vector<Sample>>& runs,
                                   const std::optional<BaseProfile>& base, std::vector<FitCheck>& checks) {
  cluster::Interconnect net;
  cluster::Level host;
  host.name = text.name;
  host.devices_per_group = ranks;
  host.bandwidth = BytesPerSecond(peak_Bps);
  host.ring.efficiency = cluster::EfficiencyTable{{{1, 1}}, "message_bytes"};
  net.levels.push_back(host);
  cluster::Level inter;
  json inter_json;
  if (base) {
    inter = base->parsed.interconnect.inter_node();
    json bj = json::parse(base->text);
    inter_json = bj["interconnect"]["levels"].back();
    inter_json["notes"] = fmt::format("copied from base profile '{}' (content hash {}): one host cannot measure the "
                                      "network; {}",
                                      base->parsed.name, base->parsed.content_hash,
                                      inter_json.value("notes", std::string("")));
  } else {
    inter.name = "network";
    inter.inter_node = true;
    inter.nics_per_node = 1;
    inter.nic_bandwidth = BytesPerSecond(peak_Bps);
    inter.ring.efficiency = cluster::EfficiencyTable{{{1, 1}}, "message_bytes"};
  }
  net.levels.push_back(inter);

  json lj = json::object();
  lj["name"] = text.name;
  lj["fabric"] = text.fabric;
  lj["devices_per_group"] = sourced(ranks, text.group_source);
  json eff = json::object();
  if (ranks >= 2 && !runs.empty()) {
    const cluster::Placement where{ranks, ranks};
    PLANNER_TRY(LevelTables lt, fit_level(net, 0, where, runs));
    lj["bandwidth_GBps"] = sourced(
        sig(lt.bandwidth.value / 1e9, 6),
        kernel_source(by, fmt::format("the best bus bandwidth left after latency, factor*S/(t - steps*alpha), over "
                                      "every timed {} and size (reached by {})",
                                      text.bandwidth_over, lt.bandwidth_from)));
    lj["latency_us"] = sourced(
        sig(net.levels[0].latency.value * 1e6),
        kernel_source(by, "all_reduce: intercept of the line fit t = a + b*S over its sizes / 2(n-1) steps, lowered "
                          "where a size needs it to be reachable at bandwidth_GBps (docs/calibrate.md)"));
    for (const auto& [kind, t] : lt.tables) {
      json tj = table("message_bytes", text.table_source(kind, t.rows.size()), t.rows);
      if (kind == Collective::all_reduce) {
        eff["ring"] = tj;
      } else {
        tj["latency_us"] = sig(net.levels[0].latency_for(kind).value * 1e6);
        eff[std::string(core::to_string(kind))] = tj;
      }
      checks.push_back({fmt::format("{} on {} ({} ranks)", core::to_string(kind), text.name, ranks),
                        static_cast<int>(runs.at(kind).size()), 0, t.capped});
    }
  } else {
    lj["bandwidth_GBps"] = sourced(sig(peak_Bps / 1e9), text.one_rank_est);
    lj["latency_us"] = sourced(0, text.one_rank_est);
    eff["ring"] = table("message_bytes", text.one_rank_est, {{1, 1}});
  }
  lj["efficiency"] = eff;
  if (!base) {
    inter_json = json::object();
    inter_json["name"] = "network";
    inter_json["fabric"] = "not measured (one host)";
    inter_json["nics_per_node"] = sourced(1, text.network_est);
    inter_json["nic_GBps"] = sourced(lj["bandwidth_GBps"]["value"].get<double>(), text.network_est);
    inter_json["latency_us"] = sourced(lj["latency_us"]["value"].get<double>(), text.network_est);
    json ring = eff["ring"];
    ring["source"] = text.network_est;
    inter_json["efficiency"] = json{{"ring", ring}};
  }
  return json{{"levels", json::array({lj, inter_json})}};
}

json profile_document(const std::string& name, const std::string& system, const std::string& source,
                      const std::string& notes, bool from_base, const Provenance& prov, json device,
                      json interconnect) {
  json doc = json::object();
  doc["schema_version"] = 1;
  doc["name"] = name;
  doc["system"] = system;
  doc["source"] = source;
  doc["notes"] = fmt::format("{} {}", notes,
                             from_base ? "The inter-node level comes from the base profile."
                                       : "The inter-node level is not measured (see its sources).");
  doc["provenance"] = provenance_json(prov);
  doc["device"] = std::move(device);
  doc["interconnect"] = std::move(interconnect);
  return doc;
}

std::vector<GemmSample> GemmSweep::square_samples() const {
  std::vector<GemmSample> out;
  for (std::size_t i = 0; i < square.size(); ++i) out.push_back({sizes[i], sizes[i], sizes[i], square[i].time});
  return out;
}

std::vector<GemmSample> GemmSweep::skinny_samples() const {
  std::vector<GemmSample> out;
  for (std::size_t i = 0; i < skinny.size(); ++i) out.push_back({skinny_dims[i], skinny_n, skinny_n, skinny[i].time});
  return out;
}

double GemmSweep::misaligned_ratio() const {
  return std::min(1.0, (misaligned.x / misaligned.time.value) / (aligned.x / aligned.time.value));
}

void gemm_fields(json& dev, const std::string& by, const GemmSweep& sweep, const GemmTables& g,
                 std::string_view kernel, std::string_view samples) {
  dev["gemm_efficiency"] = table(
      "flops",
      kernel_source(by, fmt::format("upper envelope of {} rate / peak against 2mnk over square n x n x n "
                                    "(n = {}..{}) and [d x {}] x [{} x {}] products; fitted jointly with the skinny "
                                    "table (docs/calibrate.md), largest model error over all {} {} measurements "
                                    "{:.2f} %",
                                    kernel, sweep.sizes.front(), sweep.sizes.back(), sweep.skinny_n, sweep.skinny_n,
                                    sweep.skinny_n, sweep.square.size() + sweep.skinny.size(), samples,
                                    100 * g.max_error)),
      g.efficiency);
  dev["gemm_skinny_efficiency"] = table(
      "min_dim",
      kernel_source(by, fmt::format("per min dim d, the geometric mean over the {1} samples of that d (cubes d^3, "
                                    "[d x {0}] x [{0} x {0}]) of rate / (peak x gemm_efficiency at its FLOPs)",
                                    sweep.skinny_n, samples)),
      g.skinny);
  dev["gemm_misaligned_factor"] = sourced(
      frac(sweep.misaligned_ratio()),
      kernel_source(by, fmt::format("{} rate at n = {} over the rate at n = {} (square), capped at 1", kernel,
                                    sweep.aligned_n - 1, sweep.aligned_n)));
}

std::map<Collective, std::vector<Sample>> timed_collectives(
    const std::array<std::vector<Sample>, core::kCollectiveCount>& collectives) {
  std::map<Collective, std::vector<Sample>> runs;
  for (Collective k : kCalibratedCollectives)
    if (!collectives[static_cast<std::size_t>(k)].empty()) runs[k] = collectives[static_cast<std::size_t>(k)];
  return runs;
}

double traffic_error(const cluster::DeviceProfile& d, std::span<const Sample> samples) {
  double worst = 0;
  for (const Sample& s : samples) {
    const double t = s.x / (d.achievable_hbm_bandwidth().value * d.memory_bound_efficiency(Bytes(s.x)));
    worst = std::max(worst, std::abs(t / s.time.value - 1));
  }
  return worst;
}

Status recheck_collectives(WrittenProfile& out, const std::map<Collective, std::vector<Sample>>& runs,
                           std::string_view level, int ranks) {
  for (auto& c : out.checks)
    for (const auto& [kind, samples] : runs)
      if (c.what.rfind(fmt::format("{} on {}", core::to_string(kind), level), 0) == 0) {
        PLANNER_TRY(c.max_error, model_error(out.parsed, kind, {ranks, ranks}, samples));
      }
  return Status::success();
}

// device.memory_bound_class_efficiency (key: the op class) and
// device.memory_bound_op_efficiency (key: the ONNX op type): a table over
// the bytes one pass moves (as the ops rules count them) of the rate the
// backend's kernels reached, less their special functions (priced apart,
// exps at exp_rate and erfs at erf_rate), over hbm_GBps. One row per batch
// the samples ran at: x the mean bytes of a pass, y the bytes of every
// pass (forward and backward) of the key's ops at that batch over their
// time. Rows are never taken from different kernels at different sizes:
// a table read between a transpose's row and a split's would move with
// the kernel, not the size.
json kernel_efficiency(std::span<const ClassKernelSample> samples, bool by_class, const RateTable& triad,
                       double exp_rate, double erf_rate, const std::string& by) {
  const auto rate = [](double n, double r) { return r > 0 ? n / r : 0.0; };
  struct Sum {
    double bytes = 0, time = 0;
    int passes = 0;
  };
  std::map<std::string, std::map<std::int64_t, Sum>> points;  // key -> batch -> sums
  std::map<std::string, std::string> ops;
  const auto add = [&](Sum& sum, Bytes b, Seconds t, double exps, double erfs) {
    const double left = t.value - rate(exps, exp_rate) - rate(erfs, erf_rate);
    if (b.value <= 0 || left <= 0) return false;
    sum.bytes += b.value;
    sum.time += left;
    ++sum.passes;
    return true;
  };
  for (const auto& k : samples) {
    const std::string& key = by_class ? k.op_class : k.op_type;
    Sum one;
    const bool f = add(one, k.forward_bytes, k.forward, k.forward_special, k.forward_erf);
    const bool b = add(one, k.backward_bytes, k.backward, k.backward_special, k.backward_erf);
    if (!f && !b) continue;
    auto& sum = points[key][k.batch];
    sum.bytes += one.bytes;
    sum.time += one.time;
    sum.passes += one.passes;
    ops[key] += fmt::format("{}{} ({:.3g} + {:.3g} ms)", ops[key].empty() ? "" : "; ", k.op, k.forward.value * 1e3,
                            k.backward.value * 1e3);
  }
  json out = json::object();
  for (const auto& [key, by_batch] : points) {
    std::map<double, double> rows;  // mean bytes of a pass -> efficiency
    for (const auto& [batch, sum] : by_batch) rows[sum.bytes / sum.passes] = sum.bytes / sum.time / triad.peak;
    std::vector<cluster::EfficiencyTable::Row> table_rows;
    for (const auto& [x, y] : rows) table_rows.push_back({sig(x), sig(y)});
    out[key] = table("bytes",
                     kernel_source(by, fmt::format("the CPU backend's own kernels (runtime_cpu::forward_op and "
                                                   "backward_op), forward + backward: {}; a row per batch: the mean "
                                                   "bytes the ops rules count for a pass, and all passes' bytes over "
                                                   "their time less the special functions, over hbm_GBps",
                                                   ops[key])),
                     table_rows);
  }
  return out;
}

}  // namespace detail

using namespace detail;

Result<WrittenProfile> cpu_profile(const CpuMeasurements& m, const Provenance& prov, const std::string& name,
                                   const std::optional<BaseProfile>& base) {
  PLANNER_TRY_STATUS(check_name(name));
  const std::string by = fmt::format("measured by planner calibrate --backend cpu on {} ({} rank(s) at once, {})",
                                     m.host, m.ranks, item(prov, "date"));
  // GEMM.
  const GemmSweep sweep{m.gemm_sizes, m.gemm, m.skinny_n, m.skinny_dims, m.skinny, m.aligned_n, m.aligned,
                        m.misaligned};
  const std::vector<GemmSample> square = sweep.square_samples(), skinny = sweep.skinny_samples();
  PLANNER_TRY(GemmTables g, fit_gemm(square, skinny));
  PLANNER_TRY(LineFit gline, fit_line(m.gemm));
  PLANNER_TRY(RateTable triad, rate_table(m.triad));

  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double visible = m.host_memory.value / m.ranks / gib;
  json dev = json::object();
  dev["name"] = m.cpu_model;
  dev["peak_tflops"] = json{
      {"fp32", sourced(sig(g.peak / 1e12, 6),
                       kernel_source(by, fmt::format("the best OpenBLAS cblas_sgemm rate over {} square sizes {}..{} and "
                                                     "{} skinny shapes (mean over ranks; the line fit t = t0 + F/R "
                                                     "gives R = {:.4g} GFLOP/s, t0 = {})",
                                                     m.gemm.size(), m.gemm_sizes.front(), m.gemm_sizes.back(),
                                                     m.skinny.size(), 1e-9 / gline.slope, us(gline.intercept))))},
      {"tf32", nullptr}, {"fp16", nullptr}, {"bf16", nullptr}, {"fp8", nullptr}};
  const std::string mem_src = kernel_source(
      by, fmt::format("/proc/meminfo MemTotal ({:.2f} GiB) divided by the {} rank(s) that share the host",
                      m.host_memory.value / gib, m.ranks));
  dev["hbm_GB"] = sourced(sig(m.host_memory.value / m.ranks / 1e9), mem_src);
  dev["visible_GiB"] = sourced(sig(visible), mem_src);
  dev["cuda_context_GiB"] = sourced(
      sig(std::min(m.startup_resident.value / gib, 0.5 * visible)),
      kernel_source(by, "resident memory (VmRSS) of a rank after MPI and OpenBLAS start-up, before any buffer (mean "
                        "over ranks)"));
  dev["communicator_GiB"] = sourced(
      sig(m.communicator_resident.value / gib),
      kernel_source(by, m.ranks > 1 ? "resident memory (VmRSS) the collective sweep left once its buffers were freed "
                                      "(max over ranks): MPI shared-memory segments"
                                    : "one rank: no collective ran, so no communicator memory"));
  dev["hbm_GBps"] = sourced(
      sig(triad.peak / 1e9),
      kernel_source(by, fmt::format("the best STREAM-like triad rate a[i] = b[i] + s*c[i] over doubles (24 bytes per "
                                    "element, as STREAM counts) over {} array sizes, every rank at once (a rank's "
                                    "share of the host); at the largest size {:.4g} GB/s",
                                    m.triad.size(), triad.rows.back().y * triad.peak / 1e9)));
  dev["hbm_efficiency"] = sourced(1, kernel_source(by, "1: hbm_GBps is already the best rate a kernel reached"));
  dev["elementwise_efficiency"] =
      table("bytes", kernel_source(by, "triad rate at each size (bytes moved, 24 per element) / hbm_GBps"), triad.rows);
  dev["launch_overhead_us"] = sourced(
      0, kernel_source(by, "0: the GEMM and elementwise tables are fitted on whole call times, per-call cost "
                           "included, so a separate per-op cost would count it twice"));
  if (m.exp_per_element.value > 0 && m.erf_per_element.value > 0) {
    const auto unary_rate = [&](Seconds per_element, std::string_view fn, std::string_view users) {
      return sourced(sig(1.0 / per_element.value),
                     kernel_source(by, fmt::format("the CPU backend's own {} kernel (runtime_cpu::unary, libm in "
                                                   "double) over {} cache-resident elements: {:.3g} ns per element, "
                                                   "loads and stores included ({})",
                                                   fn, m.special_elements, per_element.value * 1e9, users)));
    };
    dev["special_function_rate_per_s"] =
        unary_rate(m.exp_per_element, "exp", "at softmax-like arguments in [-4, 4): softmax, the loss, sigmoid and "
                                             "tanh evaluate exps");
    dev["erf_rate_per_s"] = unary_rate(m.erf_per_element, "erf",
                                       "at exact GELU's arguments x / sqrt(2), x ~ N(0, 1): libm's erf costs more "
                                       "above |x| = 0.84; Erf and exact Gelu");
  }
  if (m.adam_per_param.value > 0)
    dev["adam_update_rate_params_per_s"] = sourced(
        sig(1.0 / m.adam_per_param.value),
        kernel_source(by, fmt::format("the CPU backend's own AdamW step (runtime_cpu::adamw_step) over {} fp32 "
                                      "parameters: {:.3g} ns per parameter, memory traffic included",
                                      m.adam_params, m.adam_per_param.value * 1e9)));
  if (!m.class_kernels.empty()) {
    const double exp_rate = m.exp_per_element.value > 0 ? 1.0 / m.exp_per_element.value : 0.0;
    const double erf_rate = m.erf_per_element.value > 0 ? 1.0 / m.erf_per_element.value : 0.0;
    dev["memory_bound_class_efficiency"] = kernel_efficiency(m.class_kernels, true, triad, exp_rate, erf_rate, by);
    dev["memory_bound_op_efficiency"] = kernel_efficiency(m.class_kernels, false, triad, exp_rate, erf_rate, by);
  }
  // A spread below 0.1 % is no spread; the profile's domain is (0, 1].
  if (m.step_cv >= 1e-3 && m.step_cv <= 1)
    dev["step_time_cv"] = sourced(
        sig(m.step_cv),
        kernel_source(by, fmt::format("the spread (standard deviation / mean) of {} rounds of the same sgemm work ({} "
                                      "calls of n = {}, {:.3g} s a round) run by every rank at once, over every rank "
                                      "and round: a synchronous step waits for its slowest rank (estimate: "
                                      "straggler.hpp)",
                                      m.step_rounds, m.step_calls, m.step_gemm_n, m.step_round_s)));
  gemm_fields(dev, by, sweep, g, "sgemm", "sgemm");
  dev["gemm_alignment_bytes"] =
      sourced(16, "estimate, not measured: 16 bytes (4 fp32, one SSE vector); gemm_misaligned_factor is measured "
                  "at an odd size, which is misaligned for any such width");

  // Interconnect.
  WrittenProfile out;
  const std::string mpi = item(prov, "mpi_library");
  HostLevelText lt;
  lt.name = "shm";
  lt.fabric = fmt::format("MPI between the ranks of one host ({}), through planner's runtime::Communicator",
                          mpi.empty() ? "MPI" : mpi);
  lt.group_source = kernel_source(by, fmt::format("the ranks of this calibration, all on {}", m.host));
  lt.bandwidth_over = "collective";
  lt.one_rank_est = "estimate, not measured: one rank, no collective ran; the host's triad bandwidth "
                    "(hbm_GBps) is an upper bound for any copy between ranks; use this profile for one device";
  lt.network_est = fmt::format(
      "estimate, not measured: the calibration ran on one host, so no network was timed; this level copies the "
      "measured shm level ({}) so that the profile loads, and is an upper bound; pass --base PROFILE to take a "
      "measured network level",
      by);
  lt.table_source = [&](Collective kind, std::size_t rows) {
    return kernel_source(
        by, fmt::format("{} of f32 buffers through runtime::Communicator over {} message sizes; e(S) solved so that "
                        "the cost model (cluster/collective.hpp) reproduces each time with B = bandwidth_GBps{}",
                        core::to_string(kind), rows,
                        kind == Collective::all_reduce ? "" : " and its own latency_us (line-fit intercept / steps, lowered "
                                                              "where a size needs it)"));
  };
  const auto runs = timed_collectives(m.collectives);
  PLANNER_TRY(json net, one_host_interconnect(lt, by, m.ranks, triad.peak, runs, base, out.checks));
  const json doc = profile_document(
      name,
      fmt::format("{} on {}: {} MPI rank(s), one rank = one device, OpenBLAS with {} thread(s) per rank", m.cpu_model,
                  m.host, m.ranks, m.openblas_threads),
      fmt::format("{} (docs/calibrate.md): OpenBLAS sgemm, a STREAM-like triad and MPI collectives; nothing else was "
                  "timed",
                  by),
      "fp32 only (sgemm): estimate with --precision fp32 --attention unfused.", base.has_value(), prov, dev, net);
  out.text = doc.dump(2) + "\n";
  PLANNER_TRY(out.parsed, cluster::parse_profile(out.text, name + ".json"));

  // Self-check: the written profile against every measurement.
  out.checks.insert(out.checks.begin(), FitCheck{"sgemm (square and skinny)",
                                                 static_cast<int>(square.size() + skinny.size()), g.max_error, 0});
  out.checks.insert(out.checks.begin() + 1, FitCheck{"triad", static_cast<int>(m.triad.size()),
                                                     traffic_error(out.parsed.device, m.triad), 0});
  PLANNER_TRY_STATUS(recheck_collectives(out, runs, "shm", m.ranks));
  return out;
}

Result<WrittenProfile> nccl_profile(const BaseProfile& base, std::span<const NcclSection> runs,
                                    const Provenance& prov, const std::string& name, const std::string& nccl_file) {
  PLANNER_TRY_STATUS(check_name(name));
  json doc = json::parse(base.text);
  cluster::Interconnect net = base.parsed.interconnect;
  const int per_node = net.devices_per_node();
  // Each run fits one level at one placement; group them.
  struct Group {
    std::size_t level = 0;
    cluster::Placement where;
    std::map<Collective, std::vector<Sample>> runs;
    std::map<Collective, const NcclSection*> from;
  };
  std::map<std::pair<std::size_t, std::pair<int, int>>, Group> groups;
  std::map<std::pair<std::size_t, Collective>, const NcclSection*> seen;
  for (const NcclSection& s : runs) {
    if (s.ranks_per_node > per_node)
      return make_error("{}:{}: {} ranks per host, but base profile '{}' has {} devices per node", nccl_file, s.line,
                        s.ranks_per_node, base.parsed.name, per_node);
    const int nodes = s.ranks / s.ranks_per_node;
    std::size_t level = net.levels.size() - 1;
    if (nodes == 1)
      for (std::size_t i = 0; i + 1 < net.levels.size(); ++i)
        if (net.levels[i].devices_per_group >= s.ranks_per_node) {
          level = i;
          break;
        }
    if (auto it = seen.find({level, s.kind}); it != seen.end())
      return make_error("{}:{}: a second {} run for level '{}' (the first is at line {}); keep one per level",
                        nccl_file, s.line, core::to_string(s.kind), net.levels[level].name, it->second->line);
    seen[{level, s.kind}] = &s;
    Group& g = groups[{level, {s.ranks, s.ranks_per_node}}];
    g.level = level;
    g.where = {s.ranks, s.ranks_per_node};
    g.runs[s.kind] = samples_of(s);
    g.from[s.kind] = &s;
  }
  std::map<std::size_t, int> fitted_per_level;
  for (const auto& [key, g] : groups)
    if (++fitted_per_level[g.level] > 1)
      return make_error("{}: runs at different rank counts fit level '{}'; keep one placement per level", nccl_file,
                        net.levels[g.level].name);

  WrittenProfile out;
  const std::string by = fmt::format("measured by nccl-tests ({}), fitted by planner calibrate --from-nccl-tests on {}",
                                     nccl_file, item(prov, "date"));
  for (auto& [key, g] : groups) {
    PLANNER_TRY(LevelTables lt, fit_level(net, g.level, g.where, g.runs));
    const cluster::Level& l = net.levels[g.level];
    json& lj = doc["interconnect"]["levels"][g.level];
    const std::string placement = fmt::format("{} ranks, {} per host", g.where.ranks, g.where.ranks_per_node);
    if (!lt.single_stage) {
      // bandwidth and latency stay the base's
    } else if (l.inter_node) {
      lj["nic_GBps"] = sourced(sig(l.nic_bandwidth.value / 1e9, 6),
                               fmt::format("{}: best bus bandwidth after latency over the runs on {} ({}), per NIC",
                                           by, placement, lt.bandwidth_from));
    } else {
      lj["bandwidth_GBps"] = sourced(sig(l.bandwidth.value / 1e9, 6),
                                     fmt::format("{}: best bus bandwidth after latency over the runs on {} ({})", by,
                                                 placement, lt.bandwidth_from));
    }
    json& eff = lj["efficiency"];
    for (const auto& [kind, t] : lt.tables) {
      const NcclSection& s = *g.from[kind];
      const std::string src = fmt::format(
          "{}: {} (line {}, {}, {} sizes {}..{} B, out-of-place time); e(S) solved so that the cost model "
          "(cluster/collective.hpp) reproduces each time{}",
          by, s.test.empty() ? std::string(core::to_string(kind)) : s.test, s.line, placement, t.rows.size(),
          t.rows.front().x, t.rows.back().x,
          t.capped ? fmt::format("; {} size(s) faster than the bandwidth allows, capped at 1", t.capped) : "");
      json tj = table("message_bytes", src, t.rows);
      if (kind == Collective::all_reduce) {
        eff["ring"] = tj;
        eff.erase("tree");
        eff.erase("nvls");
        if (lt.single_stage)
          lj["latency_us"] = sourced(sig(l.latency.value * 1e6),
                                     fmt::format("{}: all_reduce line-fit intercept / 2(n-1) steps ({})", by, placement));
      } else {
        if (lt.single_stage) tj["latency_us"] = sig(l.latency_for(kind).value * 1e6);
        eff[std::string(core::to_string(kind))] = tj;
      }
      out.checks.push_back({fmt::format("{} on {} ({})", core::to_string(kind), l.name, placement),
                            static_cast<int>(t.rows.size()), 0, t.capped});
    }
    lj["notes"] = fmt::format("refitted to {} ({}); tree and nvls tables dropped where all_reduce was refitted "
                              "(the measured all-reduce is whichever algorithm NCCL chose)",
                              nccl_file, placement);
  }
  doc["name"] = name;
  doc["system"] = fmt::format("{}; interconnect refitted to nccl-tests runs ({})", doc.value("system", ""), nccl_file);
  doc["source"] = fmt::format("{}; interconnect: {}", doc.value("source", ""), by);
  doc["provenance"] = provenance_json(prov);
  out.text = doc.dump(2) + "\n";
  PLANNER_TRY(out.parsed, cluster::parse_profile(out.text, name + ".json"));
  for (auto& c : out.checks)
    for (const auto& [key, g] : groups)
      for (const auto& [kind, samples] : g.runs) {
        const std::string prefix = fmt::format("{} on {} (", core::to_string(kind), net.levels[g.level].name);
        if (c.what.rfind(prefix, 0) == 0) {
          PLANNER_TRY(c.max_error, model_error(out.parsed, kind, g.where, samples));
        }
      }
  return out;
}

}  // namespace planner::calibrate
