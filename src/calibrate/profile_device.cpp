// The device profile (profile_out.hpp, device_profile): measurements of
// measure_device.hpp as profile JSON, every number with its source.

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "planner/calibrate/measure_device.hpp"
#include "planner/calibrate/profile_out.hpp"
#include "profile_json.hpp"

namespace planner::calibrate {

using namespace detail;
using core::Collective;
using core::Precision;

namespace {

/// cluster's peak_tflops key of a device precision.
std::string key(Precision p) { return std::string(core::precision_name(p)); }

/// Geometric mean over `samples` of (rate / peak) / e_table(x): how a
/// precision's efficiency compares with the bf16 table at the same FLOPs.
double precision_factor(const std::vector<Sample>& samples, double peak, const cluster::EfficiencyTable& t) {
  double log_sum = 0;
  for (const Sample& s : samples) log_sum += std::log((s.x / s.time.value / peak) / t.interpolate(s.x));
  return std::exp(log_sum / static_cast<double>(samples.size()));
}

}  // namespace

Result<WrittenProfile> device_profile(const DeviceMeasurements& m, const Provenance& prov, const std::string& name,
                                      const std::optional<BaseProfile>& base) {
  PLANNER_TRY_STATUS(check_name(name));
  const std::string by = fmt::format("measured by planner calibrate --backend cuda on {} ({}, {} rank(s) at once, {})",
                                     m.host, m.device, m.ranks, item(prov, "date"));
  const std::string blas = item(prov, "cublas");
  // GEMM tables from bf16 (the precision plans train in by default).
  const auto& bf16 = m.gemm[static_cast<std::size_t>(Precision::bf16)];
  const GemmSweep sweep{m.gemm_sizes, bf16, m.skinny_n, m.skinny_dims, m.skinny, m.aligned_n, m.aligned,
                        m.misaligned};
  const std::vector<GemmSample> square = sweep.square_samples(), skinny = sweep.skinny_samples();
  PLANNER_TRY(GemmTables g, fit_gemm(square, skinny));
  PLANNER_TRY(RateTable copy, rate_table(m.copy));
  const cluster::EfficiencyTable gemm_table = rounded(g.efficiency, "flops");

  const double gib = 1024.0 * 1024.0 * 1024.0;
  json dev = json::object();
  dev["name"] = m.device;
  json peaks = json::object();
  json factors = json::object();
  std::map<Precision, double> peak_of;
  for (int i = 0; i < runtime::kDevicePrecisionCount; ++i) {
    const auto p = static_cast<Precision>(i);
    const auto& s = m.gemm[static_cast<std::size_t>(i)];
    PLANNER_TRY(RateTable r, rate_table(s));
    const double peak = p == Precision::bf16 ? g.peak : r.peak;
    peak_of[p] = peak;
    const char* how = p == Precision::fp32   ? "fp32 data, CUBLAS_COMPUTE_32F"
                      : p == Precision::tf32 ? "fp32 data, CUBLAS_COMPUTE_32F_FAST_TF32"
                      : p == Precision::bf16 ? "bf16 data, CUBLAS_COMPUTE_32F"
                                             : "fp16 data, CUBLAS_COMPUTE_32F";
    peaks[key(p)] = sourced(
        sig(peak / 1e12, 6),
        kernel_source(by, fmt::format("the best cublasGemmStridedBatchedEx rate ({}{}) over {} square sizes {}..{}{} "
                                      "(device time between cudaEvents, mean over ranks)",
                                      how, blas.empty() ? "" : ", cuBLAS " + blas, s.size(), m.gemm_sizes.front(),
                                      m.gemm_sizes.back(),
                                      p == Precision::bf16 ? fmt::format(" and {} skinny shapes", m.skinny.size()) : "")));
    if (p != Precision::bf16)
      factors[key(p)] = sourced(
          sig(std::clamp(precision_factor(s, peak, gemm_table), 1e-3, 2.0)),
          kernel_source(by, fmt::format("geometric mean over the {} square {} GEMMs of (rate / {} peak) / "
                                        "gemm_efficiency at the same FLOPs (the table is fitted on bf16)",
                                        s.size(), key(p), key(p))));
  }
  peaks["fp8"] = nullptr;
  dev["peak_tflops"] = json{{"fp32", peaks["fp32"]}, {"tf32", peaks["tf32"]}, {"fp16", peaks["fp16"]},
                            {"bf16", peaks["bf16"]}, {"fp8", nullptr}};
  const std::string mem_src = kernel_source(by, fmt::format("cudaMemGetInfo total ({:.2f} GiB)", m.total_memory.value / gib));
  dev["hbm_GB"] = sourced(sig(m.total_memory.value / 1e9), mem_src);
  dev["visible_GiB"] = sourced(sig(m.total_memory.value / gib), mem_src);
  dev["cuda_context_GiB"] = sourced(
      sig(std::max(m.context_memory.value / gib, 1e-4)),
      kernel_source(by, "cudaMemGetInfo total - free once the CUDA context, the stream and the cuBLAS handle exist, "
                        "before any buffer (mean over ranks)"));
  dev["communicator_GiB"] = sourced(
      sig(m.communicator_memory.value / gib),
      kernel_source(by, m.ranks > 1 ? "device memory the NCCL communicator and its collective sweep kept once the "
                                      "sweep's buffers were freed (cudaMemGetInfo, max over ranks)"
                                    : "one rank: no communicator was created, so no communicator memory"));
  dev["hbm_GBps"] = sourced(
      sig(copy.peak / 1e9),
      kernel_source(by, fmt::format("the best rate of the replay's traffic kernels (a 16-byte-load read pass over S/2 "
                                    "bytes, then a 16-byte-store write pass over S/2 bytes; x = S) over {} sizes "
                                    "{:.0f} KiB..{:.0f} MiB",
                                    m.copy.size(), m.copy.front().x / 1024, m.copy.back().x / (1 << 20))));
  dev["hbm_efficiency"] = sourced(1, kernel_source(by, "1: hbm_GBps is already the best rate a kernel reached"));
  dev["elementwise_efficiency"] =
      table("bytes", kernel_source(by, "traffic rate at each size (bytes read + written) / hbm_GBps"), copy.rows);
  dev["launch_overhead_us"] = sourced(
      sig(m.launch_sync.value * 1e6),
      kernel_source(by, "host time of a 16-byte write kernel launched and synchronized 200 times, minus its "
                        "back-to-back device time: the per-task cost of a replay that synchronizes after each task "
                        "(GEMM and traffic tables are device times, so they do not hold it)"));
  gemm_fields(dev, by, sweep, g, "bf16 GEMM", "bf16");
  dev["gemm_alignment_bytes"] =
      sourced(16, "estimate, not measured: 16 bytes (8 bf16), the operand alignment NVIDIA's tensor-core GEMMs "
                  "want; gemm_misaligned_factor is measured at an odd size, misaligned for any such width");
  dev["gemm_precision_factor"] = factors;

  // Interconnect: the ranks of this host, then the network.
  WrittenProfile out;
  HostLevelText lt;
  lt.name = "local";
  lt.fabric = fmt::format("NCCL {} between the GPUs of one host, through planner's runtime::Communicator",
                          item(prov, "nccl"));
  lt.group_source = kernel_source(by, fmt::format("the ranks (one GPU each) of this calibration, all on {}", m.host));
  lt.bandwidth_over = "NCCL collective";
  lt.one_rank_est = "estimate, not measured: one rank, no collective ran; the device's copy bandwidth "
                    "(hbm_GBps) stands in; use this profile for one device";
  lt.network_est = fmt::format(
      "estimate, not measured: the calibration ran on one host, so no network was timed; this level copies the "
      "local level ({}) so that the profile loads; pass --base PROFILE to take a measured network level",
      by);
  lt.table_source = [&](Collective kind, std::size_t rows) {
    return kernel_source(by, fmt::format("{} of f32 device buffers through the NCCL communicator over {} message "
                                         "sizes; e(S) solved so that the cost model (cluster/collective.hpp) "
                                         "reproduces each time",
                                         core::to_string(kind), rows));
  };
  const auto runs = timed_collectives(m.collectives);
  PLANNER_TRY(json net, one_host_interconnect(lt, by, m.ranks, copy.peak, runs, base, out.checks));
  const json doc = profile_document(
      name, fmt::format("{} on {}: {} rank(s), one GPU each", m.device, m.host, m.ranks),
      fmt::format("{} (docs/calibrate.md): cuBLAS GEMMs, the replay's traffic kernels and NCCL collectives; nothing "
                  "else was timed",
                  by),
      "No fused attention was timed: estimate with --attention unfused. fp8 not measured.", base.has_value(), prov,
      dev, net);
  out.text = doc.dump(2) + "\n";
  PLANNER_TRY(out.parsed, cluster::parse_profile(out.text, name + ".json"));

  // Self-check: the written profile against every kernel measurement.
  const auto& d = out.parsed.device;
  std::vector<FitCheck> kernels;
  kernels.push_back({"bf16 GEMM (square and skinny)", static_cast<int>(square.size() + skinny.size()), g.max_error, 0});
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16}) {
    const auto& s = m.gemm[static_cast<std::size_t>(p)];
    const auto cp = p == Precision::fp32   ? core::Precision::fp32
                    : p == Precision::tf32 ? core::Precision::tf32
                                           : core::Precision::fp16;
    double worst = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto n = static_cast<std::int64_t>(m.gemm_sizes[i]);
      const double e = d.gemm_efficiency(n, n, n, cp);
      const double t = s[i].x / (d.peak_by_precision[static_cast<std::size_t>(cp)]->value * e);
      worst = std::max(worst, std::abs(t / s[i].time.value - 1));
    }
    kernels.push_back({fmt::format("{} GEMM (square)", key(p)), static_cast<int>(s.size()), worst, 0});
  }
  kernels.push_back({"copy traffic", static_cast<int>(m.copy.size()), traffic_error(d, m.copy), 0});
  out.checks.insert(out.checks.begin(), kernels.begin(), kernels.end());
  PLANNER_TRY_STATUS(recheck_collectives(out, runs, "local", m.ranks));
  return out;
}

}  // namespace planner::calibrate
