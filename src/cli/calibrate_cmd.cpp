// planner calibrate: measures a cluster profile (docs/calibrate.md).
//
//   mpirun -n K planner calibrate --backend cpu|cuda -o FILE.json [--quick] [--base P] [--force]
//   planner calibrate --from-nccl-tests FILE --base PROFILE -o OUT.json [--force]
//
// The CPU backend times OpenBLAS sgemm, a triad and the collectives of the
// project's MPI communicator on K ranks; the nccl-tests mode refits a base
// profile's interconnect to nccl-tests tables. Either way the profile is
// checked by the profile reader before it is written (temp file + rename).
// Only rank 0 writes and prints; every rank exits with the same status.

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "planner/calibrate/measure.hpp"
#include "planner/calibrate/nccl_tests.hpp"
#include "planner/calibrate/profile_out.hpp"
#include "planner/cli/command.hpp"
#include "planner/cluster/profile.hpp"
#include "planner/core/io.hpp"
#include "planner/runtime_cpu/host_memory.hpp"
#include "planner/runtime_mpi/mpi_session.hpp"
#include "launch.hpp"
#ifdef PLANNER_WITH_CUDA
#include "planner/calibrate/measure_device.hpp"
#include "planner/runtime_cuda/nccl_communicator.hpp"
#endif

namespace planner::cli {
namespace {

struct CalibrateArgs {
  std::string backend;
  std::string output;
  std::string base;
  std::string nccl_tests;
  bool quick = false;
  bool force = false;
  std::vector<std::string> argv;
};

/// This process's command line (/proc/self/cmdline), for provenance.
std::vector<std::string> command_line() {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(in, arg, '\0')) out.push_back(arg);
  if (out.empty()) out = {"planner", "calibrate"};
  return out;
}

/// The output's stem is the profile name, which the reader restricts.
Status check_name(const std::string& output) {
  const std::string stem = std::filesystem::path(output).stem().string();
  if (std::filesystem::path(output).extension() != ".json")
    return make_error("-o {}: the profile file must end in .json", output);
  if (stem.empty() || stem.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos)
    return make_error("-o {}: the file's stem '{}' is the profile name and may use only lowercase letters, digits, "
                      "'.', '_' and '-'",
                      output, stem);
  return Status::success();
}

/// The profile name: the output file's stem.
std::string profile_name(const std::string& output) { return std::filesystem::path(output).stem().string(); }

Result<calibrate::BaseProfile> load_base(const std::string& base) {
  PLANNER_TRY(cluster::ClusterProfile p, cluster::load_profile(base, cluster::default_profiles_dir(nullptr)));
  PLANNER_TRY(std::string text, io::read_file(p.file));
  return calibrate::BaseProfile{std::move(text), std::move(p)};
}

void print_checks(const calibrate::WrittenProfile& w) {
  for (const auto& c : w.checks)
    fmt::print("  {:<48} {:>3} point(s)  model vs measured max {:6.2f} %{}\n", c.what, c.points, 100 * c.max_error,
               c.capped ? fmt::format("  ({} capped)", c.capped) : "");
}

Status write(const CalibrateArgs& a, const calibrate::WrittenProfile& w) {
  return io::write_file(a.output, w.text, a.force ? io::Overwrite::replace : io::Overwrite::refuse);
}

// The checks every rank of --backend cpu|cuda makes alike before measuring:
// the output is writable, the base profile (if any) loads. Returns the
// problem ("" when none) and sets `base`.
std::string check_output_and_base(const CalibrateArgs& a, std::optional<calibrate::BaseProfile>& base) {
  if (auto st = io::check_writable(a.output, a.force ? io::Overwrite::replace : io::Overwrite::refuse); !st)
    return st.error().message;
  if (a.base.empty()) return {};
  auto b = load_base(a.base);
  if (!b) return b.error().message;
  base = std::move(*b);
  return {};
}

int run_nccl(const CalibrateArgs& a) {
  if (a.base.empty()) return fail("calibrate", "--from-nccl-tests needs --base PROFILE (the device part comes from it)");
  const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
  if (auto st = io::check_writable(a.output, mode); !st) return fail("calibrate", st.error().message);
  auto text = io::read_file(a.nccl_tests);
  if (!text) return fail("calibrate", text.error().message);
  auto runs = calibrate::parse_nccl_tests(*text, a.nccl_tests);
  if (!runs) return fail("calibrate", runs.error().message);
  auto base = load_base(a.base);
  if (!base) return fail("calibrate", base.error().message);
  calibrate::Provenance prov;
  prov.items = {{"date", launch::utc_now_or_source_date()},
                {"tool", "planner calibrate --from-nccl-tests"},
                {"nccl_tests_file", a.nccl_tests},
                {"base_profile", fmt::format("{} (content hash {})", base->parsed.name, base->parsed.content_hash)}};
  for (const auto& r : *runs)
    prov.items.push_back({fmt::format("run_line_{}", r.line),
                          fmt::format("{}: {} ranks on {} host(s){}", r.test.empty() ? "(inferred)" : r.test, r.ranks,
                                      r.hosts.size(), r.device.empty() ? "" : ", " + r.device)});
  auto w = calibrate::nccl_profile(*base, *runs, prov, profile_name(a.output), a.nccl_tests);
  if (!w) return fail("calibrate", w.error().message);
  if (auto st = write(a, *w); !st) return fail("calibrate", st.error().message);
  fmt::print("wrote {} (profile '{}', base '{}', {} nccl-tests run(s))\n", a.output, w->parsed.name,
             base->parsed.name, runs->size());
  print_checks(*w);
  return kExitOk;
}

// The MPI world of --backend cpu|cuda. Rank 0 reports; a collective that
// fails ends the whole job.
struct World {
  std::unique_ptr<runtime::MpiSession> session;
  std::unique_ptr<runtime::Communicator> comm;
  bool root = false;

  [[noreturn]] void end_job(std::string_view message) {
    launch::abort_job(*session, root, "calibrate", message, kExitBadInput);
  }
  // Every rank exits with rank 0's status.
  int finish(float status) {
    if (auto st = comm->broadcast(&status, 1, core::DType::f32, 0); !st) end_job(st.error().message);
    return static_cast<int>(status);
  }
};

// Starts MPI and the world communicator; error: MPI did not start (the
// world's failure ends the job).
Result<World> open_world() {
  World w;
  PLANNER_TRY(w.session, runtime::MpiSession::init(nullptr, nullptr));
  // Kernels timed as `planner run` runs them: freed memory kept for reuse.
  (void)runtime_cpu::retain_freed_memory();  // a refusal only costs speed (header)
  w.root = w.session->world_rank() == 0;
  auto world = w.session->world();
  if (!world) w.end_job(world.error().message);
  w.comm = std::move(*world);
  return w;
}

calibrate::MeasureOptions measure_options(const CalibrateArgs& a, bool root) {
  calibrate::MeasureOptions opts;
  opts.quick = a.quick;
  if (root && isatty(STDERR_FILENO))
    opts.progress = [](std::string_view what) { fmt::print(stderr, "calibrate: {}\n", what); };
  return opts;
}

// The provenance items of a measured profile that both backends record.
std::vector<std::pair<std::string, std::string>> measured_provenance(const CalibrateArgs& a, std::string_view backend,
                                                                     const std::string& host) {
  std::string command;
  for (const auto& s : a.argv) command += (command.empty() ? "" : " ") + s;
  return {{"date", launch::utc_now_or_source_date()},
          {"tool", fmt::format("planner calibrate --backend {}", backend)},
          {"command", command},
          {"sweep", a.quick ? "quick" : "full"},
          {"host", host}};
}

std::pair<std::string, std::string> base_provenance(const calibrate::BaseProfile& base) {
  return {"base_profile", fmt::format("{} (content hash {})", base.parsed.name, base.parsed.content_hash)};
}

int run_cpu(const CalibrateArgs& a) {
  auto world = open_world();
  if (!world) return fail("calibrate", world.error().message);
  World& w = *world;
  // Every rank checks the arguments alike; rank 0 reports.
  std::optional<calibrate::BaseProfile> base;
  std::string problem = check_output_and_base(a, base);
  if (!problem.empty()) {
    if (w.root) fail("calibrate", problem);
    return kExitBadInput;
  }
  auto m = calibrate::measure_cpu(*w.comm, measure_options(a, w.root));
  if (!m) w.end_job(m.error().message);
  float status = 0;
  if (w.root) {
    calibrate::Provenance prov;
    prov.items = measured_provenance(a, "cpu", m->host);
    prov.items.insert(prov.items.end(), {{"cpu_model", m->cpu_model},
                                         {"ranks", fmt::format("{}", m->ranks)},
                                         {"mpi_library", runtime::MpiSession::library_version()},
                                         {"openblas_config", m->openblas_config},
                                         {"openblas_threads", fmt::format("{}", m->openblas_threads)}});
    if (base) prov.items.push_back(base_provenance(*base));
    auto pw = calibrate::cpu_profile(*m, prov, profile_name(a.output), base);
    Status st = pw ? write(a, *pw) : Status(pw.error());
    if (!st) {
      fail("calibrate", st.error().message);
      status = kExitBadInput;
    } else {
      const auto& d = pw->parsed.device;
      fmt::print("wrote {} (profile '{}', {} rank(s) on {}): fp32 peak {:.4g} GFLOP/s, triad {:.4g} GB/s, "
                 "rank-to-rank {:.4g} GB/s\n",
                 a.output, pw->parsed.name, m->ranks, m->host, d.peak_by_precision[0]->value / 1e9,
                 d.hbm_bandwidth.value / 1e9, pw->parsed.interconnect.levels.front().bandwidth.value / 1e9);
      print_checks(*pw);
      std::fflush(stdout);
    }
  }
  return w.finish(status);
}

// --backend cuda: the CUDA device's GEMMs and traffic kernels, the NCCL
// communicator's collectives (docs/calibrate.md). One GPU per rank.
int run_cuda(const CalibrateArgs& a) {
#ifndef PLANNER_WITH_CUDA
  return fail("calibrate", launch::kNoCudaBuild);
#else
  auto world = open_world();
  if (!world) return fail("calibrate", world.error().message);
  World& w = *world;
  std::optional<calibrate::BaseProfile> base;
  std::string problem = check_output_and_base(a, base);
  // Every rank needs a GPU; any rank without one fails the whole job alike.
  launch::RankGpu gpu;
  if (problem.empty()) {
    auto g = launch::open_rank_gpu(w.session->world_rank());
    if (g) gpu = std::move(*g);
    else problem = g.error().message;
  }
  // The highest failing rank, or -1; rank 0 prints one line.
  auto bad = launch::highest_failing_rank(*w.comm, !problem.empty());
  if (!bad) w.end_job(bad.error().message);
  if (*bad >= 0) {
    if (w.root) fail("calibrate", launch::no_gpu_message(*bad, problem));
    return kExitBadInput;
  }
  runtime::Communicator& comm = *w.comm;
  const int index = gpu.index;
  auto m = calibrate::measure_device(
      *gpu.device, comm, [&] { return runtime::make_nccl_communicator(comm, index, comm.timeout()); },
      measure_options(a, w.root));
  if (!m) w.end_job(m.error().message);
  float status = 0;
  if (w.root) {
    calibrate::Provenance prov;
    prov.items = measured_provenance(a, "cuda", m->host);
    prov.items.insert(prov.items.end(), {{"device", m->device}, {"ranks", fmt::format("{}", m->ranks)}});
    for (const auto& v : m->versions) prov.items.push_back(v);
    prov.items.push_back({"mpi_library", runtime::MpiSession::library_version()});
    if (base) prov.items.push_back(base_provenance(*base));
    auto pw = calibrate::device_profile(*m, prov, profile_name(a.output), base);
    Status st = pw ? write(a, *pw) : Status(pw.error());
    if (!st) {
      fail("calibrate", st.error().message);
      status = kExitBadInput;
    } else {
      const auto& d = pw->parsed.device;
      auto tflops = [&](core::Precision p) { return d.peak_by_precision[static_cast<std::size_t>(p)]->value / 1e12; };
      fmt::print("wrote {} (profile '{}', {} rank(s) on {}, {}): bf16 {:.4g} TFLOP/s, tf32 {:.4g}, fp32 {:.4g}, "
                 "copy {:.4g} GB/s, launch + sync {:.3g} us\n",
                 a.output, pw->parsed.name, m->ranks, m->host, m->device, tflops(core::Precision::bf16),
                 tflops(core::Precision::tf32), tflops(core::Precision::fp32), d.hbm_bandwidth.value / 1e9,
                 d.launch_overhead.value * 1e6);
      print_checks(*pw);
      std::fflush(stdout);
    }
  }
  const int rc = w.finish(status);
  gpu.device.reset();
  return rc;
#endif
}

}  // namespace

Runner setup_calibrate(CLI::App& sub) {
  auto a = std::make_shared<CalibrateArgs>();
  sub.add_option("--backend", a->backend,
                 "cpu: time OpenBLAS sgemm, a triad and MPI collectives; cuda: cuBLAS GEMMs, the replay's traffic "
                 "kernels and NCCL collectives, one GPU per rank (run under mpirun)");
  sub.add_option("-o,--output", a->output, "Profile JSON to write; its stem is the profile name")->required();
  sub.add_flag("--quick", a->quick, "Small sweep with short budgets (seconds; for tests)");
  sub.add_option("--base", a->base,
                 "Base profile (name or file): the inter-node level for --backend cpu; the device and the levels "
                 "not refitted for --from-nccl-tests");
  sub.add_option("--from-nccl-tests", a->nccl_tests, "nccl-tests output to fit the interconnect onto --base");
  sub.add_flag("--force", a->force, "Replace an existing output file");
  return [a]() -> int {
    a->argv = command_line();
    if (auto st = check_name(a->output); !st) return fail("calibrate", st.error().message);
    if (!a->nccl_tests.empty()) {
      if (!a->backend.empty()) return fail("calibrate", "--from-nccl-tests and --backend exclude each other");
      if (a->quick) return fail("calibrate", "--quick applies to --backend cpu and cuda only");
      return run_nccl(*a);
    }
    if (a->backend.empty()) return fail("calibrate", "give --backend cpu, or --from-nccl-tests FILE --base PROFILE");
    if (a->backend == "cuda") return run_cuda(*a);
    if (a->backend != "cpu")
      return fail("calibrate", fmt::format("--backend '{}' is not available (cpu or cuda; or run nccl-tests and use "
                                           "--from-nccl-tests)",
                                           a->backend));
    return run_cpu(*a);
  };
}

}  // namespace planner::cli
