// mpirun -n N planner run plan.json [--replay] [--check] [--steps S]
// [--warmup W] [--timeout S] [-o measured.json] [--force] [--json]: each rank
// derives its program from the plan and the model; --replay replays it
// (OpenBLAS GEMMs, real collectives over MPI; with --backend cuda cuBLAS
// GEMMs and NCCL collectives on one GPU per rank), without it the model trains
// for real in fp32 (executor/real.hpp; --check compares every step with the
// single-device interpreter on rank 0; with --backend cuda a one-rank plan
// trains on one GPU, runtime_cuda/gpu_train.hpp). Rank 0 reports the timed steps
// (docs/executor.md, measured.json: planner.measured/v1).

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "planner/cli/command.hpp"
#include "planner/core/io.hpp"
#include "planner/core/sha256.hpp"
#include "planner/estimate/config.hpp"
#include "planner/executor/measured.hpp"
#include "planner/executor/program.hpp"
#include "planner/executor/real.hpp"
#include "planner/executor/replay.hpp"
#include "planner/onnx/importer.hpp"
#include "planner/plan/plan.hpp"
#include "planner/report/report.hpp"
#include "planner/runtime/device.hpp"
#include "planner/runtime/fault.hpp"
#include "planner/runtime_cpu/host_memory.hpp"
#include "planner/runtime_mpi/mpi_session.hpp"
#include "launch.hpp"
#ifdef PLANNER_WITH_CUDA
#include "planner/runtime_cuda/gpu_train.hpp"
#endif

namespace planner::cli {
namespace {

struct RunArgs {
  std::string plan_file;
  std::string model;  // default: the plan's model.path
  bool replay = false;
  bool check = false;
  int steps = 5;
  int warmup = 1;
  double timeout_s = 300;
  std::string output;
  std::string trace;  // --trace: measured step beside the predicted timeline
  bool force = false;
  bool json = false;
  double max_memory_gib = 0;  // 0: MemTotal / ranks on this host
  std::string fault;
  std::string backend = "cpu";  // --backend: where the replay computes
};

// MemTotal from /proc/meminfo, bytes (0 when unreadable).
double mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemTotal:") return kib * 1024.0;
  return 0;
}

int ranks_on_this_host(int world) {
  if (const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) {
    const int n = std::atoi(s);
    if (n > 0) return n;
  }
  return world;
}

// The model file: --model, else the plan's model.path as given (from the
// working directory), else next to the plan file.
std::string model_path(const RunArgs& a, const plan::Plan& p) {
  if (!a.model.empty()) return a.model;
  namespace fs = std::filesystem;
  const fs::path given = p.model.path;
  if (given.is_absolute() || fs::exists(given)) return given.string();
  const fs::path beside = fs::path(a.plan_file).parent_path() / given;
  return fs::exists(beside) ? beside.string() : given.string();
}

// Everything a rank needs before the first collective; identical on every
// rank for the same inputs, so every rank fails the same way.
struct Prepared {
  plan::Plan plan;
  std::string plan_sha;
  executor::RankProgram program;
  std::optional<executor::StallSpec> stall;
  std::optional<runtime::FaultSpec> drop;
  // Real mode: the model at the micro-batch.
  std::unique_ptr<graph::OpGraph> graph;
};

Result<Prepared> prepare(const RunArgs& a, int rank, int world) {
  Prepared out;
  if (a.replay && a.check)
    return make_error("--check compares a real run with the interpreter; the replay computes no numerics (drop --replay)");
  if (!a.replay && !a.trace.empty())
    return make_error("--trace times the parts of a step, which only the replay measures: add --replay");
  if (a.steps < 1) return make_error("--steps must be at least 1 (got {})", a.steps);
  if (a.warmup < 0) return make_error("--warmup must be at least 0 (got {})", a.warmup);
  if (!(a.timeout_s > 0)) return make_error("--timeout must be positive (got {:g})", a.timeout_s);
  if (!a.fault.empty()) {
    if (a.fault.rfind("drop:", 0) == 0) {
      PLANNER_TRY(out.drop, runtime::parse_fault_spec(a.fault));
    } else if (a.replay) {
      PLANNER_TRY(out.stall, executor::parse_stall_spec(a.fault));
    } else {
      return make_error("--fault: the real mode takes drop:RANK:N only (got '{}')", a.fault);
    }
  }
  PLANNER_TRY(std::string text, io::read_file(a.plan_file));
  out.plan_sha = sha256_hex(text);
  PLANNER_TRY(out.plan, plan::from_json(text, a.plan_file));
  const auto& p = out.plan;
  if (p.cluster.devices != world)
    return make_error("{}: the plan has {} devices (cluster.devices) but {} ranks were started; run it with mpirun -n {}",
                      a.plan_file, p.cluster.devices, world, p.cluster.devices);
  if (!a.output.empty()) {
    const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
    PLANNER_TRY_STATUS(io::check_writable(a.output, mode));
  }
  if (!a.trace.empty()) {
    const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
    PLANNER_TRY_STATUS(io::check_writable(a.trace, mode));
    if (p.prediction.timeline.empty())
      return make_error("{}: --trace needs the plan's prediction.timeline (write the plan again with planner estimate "
                        "or planner search)",
                        a.plan_file);
  }
  const std::string model = model_path(a, p);
  if (!p.model.sha256.empty()) {
    PLANNER_TRY(std::string sha, sha256_file(model));
    if (sha != p.model.sha256)
      return make_error("{}: SHA-256 {} differs from the plan's model.sha256 {} ({}); give the plan's model with --model",
                        model, sha.substr(0, 12), p.model.sha256.substr(0, 12), a.plan_file);
  }
  onnx::ImportOptions opts;
  opts.dims = p.model.dims;
  opts.batch = p.model.batch.value_or(p.training.micro_batch);
  opts.params_from_inputs = p.model.params_from_inputs;
  PLANNER_TRY(auto imported, onnx::import_file(model, opts));
  // The pipeline column of this rank: one program per pipeline coordinate,
  // its transfers numbered in one deadlock-free order.
  std::vector<executor::RankProgram> column;
  PLANNER_TRY(auto framework, estimate::parse_framework(p.training.framework));
  executor::ProgramOptions popts;
  popts.fuse_elementwise = estimate::fuses_elementwise(framework);
  for (int s = 0; s < p.layout.pp; ++s) {
    PLANNER_TRY(auto prog,
                executor::derive_program(p, imported.graph, executor::with_coordinate(p, rank, "pp", s), popts));
    column.push_back(std::move(prog));
  }
  if (auto st = executor::order_transfers(column); !st) return make_error("{}: {}", a.plan_file, st.error().message);
  out.program = std::move(column[static_cast<std::size_t>(executor::coordinate(p, rank, "pp"))]);
  if (!a.replay) {
    if (auto st = executor::real_supported(p, imported.graph); !st)
      return make_error("{}: {}", a.plan_file, st.error().message);
    out.graph = std::make_unique<graph::OpGraph>(std::move(imported.graph));
  }
  return out;
}

std::string gib(double bytes) {
  if (bytes < 1024.0 * 1024.0 * 1024.0) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0));
  return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024.0 * 1024.0));
}
std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }

// The real mode: train the plan's model for real; --check against the
// interpreter on rank 0 (exit 1 when it fails).
int run_real_mode(const RunArgs& a, runtime::MpiSession& s, runtime::Communicator& world_comm, Prepared& pr) {
  const int rank = s.world_rank(), world_size = s.world_size();
  if (pr.drop) world_comm.set_fault(pr.drop);
  executor::RealOptions ro;
  ro.steps = a.steps;
  ro.warmup = a.warmup;
  ro.check = a.check;
  auto res = executor::run_real(pr.plan, pr.program, *pr.graph, world_comm, ro);
  if (!res) {
    launch::abort_job(s, true, "run", res.error().message, 3);
  }
  if (!res->check_failure.empty()) {
    if (rank == 0) fail("run", res->check_failure);
    return 1;
  }
  int rc = kExitOk;
  if (rank == 0) {
    executor::Measured m;
    m.mode = "real";
    m.plan_path = a.plan_file;
    m.plan_sha256 = pr.plan_sha;
    m.ranks = world_size;
    m.steps = a.steps;
    m.warmup = a.warmup;
    m.step_times_s = res->step_times_s;
    m.step_time_s = executor::median(res->step_times_s);
    // Where the step went (executor/real.hpp: RealResult::components_s).
    m.components_s = res->components_s;
    m.peak_memory_bytes = res->peak_rss_bytes;
    m.host = launch::hostname();
    m.date = launch::utc_now();
    m.versions = {{"planner", "0.1.0"},
                  {"mpi", runtime::MpiSession::library_version()},
                  {"openblas", executor::blas_config()}};
    const std::string text = executor::to_json(m);
    if (!a.output.empty()) {
      const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
      if (auto st = io::write_file(a.output, text, mode); !st) rc = fail("run", st.error().message);
    }
    if (a.json) {
      fmt::print("{}", text);
    } else {
      const auto& l = pr.plan.layout;
      fmt::print("planner run: mode real, {} ({} ranks: dp={} tp={} pp={}{} zero={}, {} schedule, {} micro-batches, {})\n",
                 a.plan_file, world_size, l.dp, l.tp, l.pp, l.cp > 1 ? fmt::format(" cp={}", l.cp) : "", l.zero,
                 l.schedule, pr.plan.training.micro_batches, pr.plan.training.optimizer.name);
      for (std::size_t i = 0; i < res->losses.size(); ++i)
        fmt::print("step {}{}: loss {:.6f}\n", i + 1, static_cast<int>(i) < a.warmup ? " (warm-up)" : "",
                   res->losses[i]);
      for (const auto& c : res->checked)
        fmt::print("check step {}: loss {:.6f} vs reference {:.6f}; max relative error {:.2e} ({}) <= {:.0e}: ok\n",
                   c.step, c.loss, c.reference_loss, c.max_rel_error,
                   c.max_rel_error == 0 ? "every value bit-identical" : c.worst, ro.tolerance);
      std::string mem;
      for (std::size_t r = 0; r < m.peak_memory_bytes.size(); ++r)
        mem += fmt::format("{}{}", r ? ", " : "", mib(m.peak_memory_bytes[r]));
      fmt::print("peak memory (RSS) per rank: {}\n", mem);
      std::string act;
      for (std::size_t r = 0; r < res->peak_activation_bytes.size(); ++r)
        act += fmt::format("{}{:.0f}", r ? ", " : "", res->peak_activation_bytes[r]);
      fmt::print("peak activations held per rank (bytes): {}\n", act);
      if (pr.plan.training.recompute != "none")
        fmt::print("recomputed per step ({}): {:.0f} ops, {:.0f} forward FLOPs\n", pr.plan.training.recompute,
                   res->recomputed_ops_per_step, res->recomputed_flops_per_step);
      fmt::print("step time: median {:.6f} s over {} steps after {} warm-up\n", m.step_time_s, a.steps, a.warmup);
      for (const auto& [k, v] : m.components_s)
        fmt::print("  {:<17} {:.6f} s per step (mean over steps of the max over ranks)\n", k, v);
      if (!a.output.empty() && rc == kExitOk) fmt::print("wrote {}\n", a.output);
    }
  }
  return rc;
}

// The real mode on one GPU (--backend cuda, runtime_cuda/gpu_train.hpp):
// a one-rank plan trained by the GPU interpreter; --check compares each of
// the first steps with the CPU interpreter (exit 1 when it fails).
int run_real_cuda(const RunArgs& a, int rank, int world_size, const Prepared& pr) {
#ifndef PLANNER_WITH_CUDA
  (void)rank, (void)world_size, (void)pr;
  return fail("run", "--backend cuda: this planner was built without CUDA");
#else
  const auto& p = pr.plan;
  if (world_size != 1 || p.cluster.devices != 1) {
    if (rank != 0) return kExitBadInput;  // every rank finds it; rank 0 says it
    return fail("run", fmt::format("{}: --backend cuda without --replay runs one-rank plans on one GPU only "
                                   "(cluster.devices is {}); --replay --backend cuda times multi-GPU plans",
                                   a.plan_file, p.cluster.devices));
  }
  if (p.training.micro_batches != 1)
    return fail("run", fmt::format("{}: --backend cuda without --replay runs one micro-batch per step "
                                   "(training.micro_batches is {})",
                                   a.plan_file, p.training.micro_batches));
  if (pr.drop) return fail("run", "--fault drop:RANK:N needs ranks that communicate; the GPU real mode has one");
  runtime::GpuTrainOptions o;
  o.steps = a.steps;
  o.warmup = a.warmup;
  o.check = a.check;
  o.max_checked_steps = executor::kMaxCheckedSteps;
  o.storage = p.training.precision == "bf16" ? runtime::GpuStorage::bf16 : runtime::GpuStorage::f32;
  o.tolerance = runtime::gpu_check_tolerance(o.storage);
  o.interpreter = executor::real_interpreter_options(p);
  o.optimizer = executor::real_optimizer(p);
  auto gpu = launch::open_rank_gpu(0);
  if (!gpu) return fail("run", gpu.error().message);
  o.device = gpu->index;
  auto& device = gpu->device;
  auto res = runtime::train_on_gpu(*pr.graph, o);
  if (!res) {
    fmt::print(stderr, "planner run: error: {}\n", res.error().message);
    return 3;
  }
  if (!res->check_failure.empty()) {
    fail("run", res->check_failure);
    return 1;
  }
  const char* storage = o.storage == runtime::GpuStorage::bf16 ? "bf16" : "fp32";
  executor::Measured m;
  m.mode = "real";
  m.backend = "cuda";
  m.plan_path = a.plan_file;
  m.plan_sha256 = pr.plan_sha;
  m.ranks = 1;
  m.steps = a.steps;
  m.warmup = a.warmup;
  m.step_times_s = res->step_times_s;
  m.step_time_s = executor::median(res->step_times_s);
  m.peak_memory_bytes = {res->peak_device_bytes};
  m.host = launch::hostname();
  m.date = launch::utc_now();
  m.versions = {{"planner", "0.1.0"}, {"device", device->name()}, {"storage", storage}};
  for (const auto& [k, v] : device->versions()) m.versions[k] = v;
  const std::string text = executor::to_json(m);
  int rc = kExitOk;
  if (!a.output.empty()) {
    const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
    if (auto st = io::write_file(a.output, text, mode); !st) rc = fail("run", st.error().message);
  }
  if (a.json) {
    fmt::print("{}", text);
    return rc;
  }
  fmt::print("planner run: mode real, backend cuda, {} (1 rank on {}, {} storage, {})\n", a.plan_file,
             device->name(), storage, p.training.optimizer.name);
  for (std::size_t i = 0; i < res->losses.size(); ++i)
    fmt::print("step {}{}: loss {:.6f}\n", i + 1, static_cast<int>(i) < a.warmup ? " (warm-up)" : "", res->losses[i]);
  for (const auto& c : res->checked)
    fmt::print("check step {}: loss {:.6f} vs CPU reference {:.6f}; max error {:.2e} ({}) <= {:.0e}: ok\n", c.step,
               c.loss, c.reference_loss, c.max_rel_error, c.worst, o.tolerance);
  fmt::print("peak device memory: {}\n", mib(res->peak_device_bytes));
  fmt::print("step time: median {:.6f} s over {} steps after {} warm-up\n", m.step_time_s, a.steps, a.warmup);
  if (!a.output.empty() && rc == kExitOk) fmt::print("wrote {}\n", a.output);
  return rc;
#endif
}

int run_replay(const RunArgs& a) {
  if (a.backend != "cpu" && a.backend != "cuda")
    return fail("run", fmt::format("--backend '{}' is not cpu or cuda", a.backend));
#ifndef PLANNER_WITH_CUDA
  if (a.backend == "cuda") return fail("run", launch::kNoCudaBuild);
#endif
  auto session = runtime::MpiSession::init(nullptr, nullptr);
  if (!session) return fail("run", session.error().message);
  (void)runtime_cpu::retain_freed_memory();  // a refusal only costs speed (header)
  runtime::MpiSession& s = **session;
  s.install_crash_reporter("planner run: error: ");
  const int rank = s.world_rank(), world_size = s.world_size();
  auto world = s.world(Seconds(a.timeout_s > 0 ? a.timeout_s : 300.0));
  if (!world) {
    if (rank == 0) fail("run", world.error().message);
    return kExitBadInput;
  }
  runtime::Communicator& world_comm = **world;
  // Bad input: every rank finds the same error; rank 0 prints it.
  auto prepared = prepare(a, rank, world_size);
  if (!prepared) {
    if (rank == 0) fail("run", prepared.error().message);
    world->reset();
    return kExitBadInput;
  }
  auto& pr = *prepared;
  if (!a.replay) {
    const int rc = a.backend == "cuda" ? run_real_cuda(a, rank, world_size, pr) : run_real_mode(a, s, world_comm, pr);
    world->reset();
    return rc;
  }
  launch::CudaRun cuda;
  if (a.backend == "cuda") {
    // The plan's precision must be one the device computes in (every rank alike).
    if (auto prec = runtime::parse_precision(pr.plan.training.precision); !prec) {
      if (rank == 0) fail("run", fmt::format("{}: training.precision: {}", a.plan_file, prec.error().message));
      world->reset();
      return kExitBadInput;
    }
    auto opened = launch::open_cuda(world_comm, Seconds(a.timeout_s));
    if (!opened) {
      if (rank == 0) fail("run", opened.error().message);
      world->reset();
      return kExitBadInput;
    }
    cuda = std::move(*opened);
  }
  // Memory: refuse, rather than scale anything down, when a rank's replay
  // would not fit. Every rank learns the largest need.
  double limit = a.max_memory_gib > 0 ? a.max_memory_gib * 1024.0 * 1024.0 * 1024.0
                                      : mem_total_bytes() / ranks_on_this_host(world_size);
  std::string limit_from = "MemTotal / ranks on this host";
  if (cuda.device && a.max_memory_gib <= 0) {
    auto mem = cuda.device->memory();
    limit = mem ? mem->free.value : 0;
    limit_from = "the GPU's free memory";
  }
  float need[2] = {static_cast<float>(pr.program.memory_bytes()), static_cast<float>(rank)};
  std::vector<float> needs(static_cast<std::size_t>(2 * world_size));
  if (auto st = world_comm.all_gather(need, needs.data(), 2, core::DType::f32); !st) {
    launch::abort_job(s, true, "run", st.error().message, 3);
  }
  for (int r = 0; r < world_size; ++r) {
    const double n = needs[static_cast<std::size_t>(2 * r)];
    if (limit > 0 && n > limit) {
      if (rank == 0)
        fail("run", fmt::format("{}: rank {} needs {} for the replay (parameters, gradients, optimizer states and "
                                "working buffers at the plan's sharded sizes), more than the {} per rank allowed "
                                "(--max-memory; default: {}); the replay scales nothing down: replay a plan for a "
                                "smaller model or on more ranks",
                                a.plan_file, r, gib(n), gib(limit), limit_from));
      world->reset();
      return kExitBadInput;
    }
  }
  if (pr.drop) world_comm.set_fault(pr.drop);
  executor::ReplayOptions ro;
  ro.steps = a.steps;
  ro.warmup = a.warmup;
  ro.stall = pr.stall;
  ro.record = !a.trace.empty();
  ro.device = cuda.device.get();
  ro.device_world = cuda.world.get();
  auto res = executor::replay(pr.program, pr.plan, world_comm, ro);
  if (!res) {
    launch::abort_job(s, true, "run", res.error().message, 3);
  }
  int rc = kExitOk;
  if (rank == 0) {
    executor::Measured m;
    m.plan_path = a.plan_file;
    m.plan_sha256 = pr.plan_sha;
    m.ranks = world_size;
    m.steps = a.steps;
    m.warmup = a.warmup;
    m.step_times_s = res->step_times_s;
    m.step_time_s = executor::median(res->step_times_s);
    for (int c = 0; c < executor::kComponents; ++c)
      m.components_s[std::string(executor::component_name(static_cast<executor::Component>(c)))] =
          res->components_s[static_cast<std::size_t>(c)];
    m.peak_memory_bytes = res->peak_rss_bytes;
    m.host = launch::hostname();
    m.date = launch::utc_now();
    m.versions = {{"planner", "0.1.0"},
                  {"mpi", runtime::MpiSession::library_version()},
                  {"openblas", executor::blas_config()}};
    m.backend = a.backend;
    if (cuda.device) {
      m.versions["device"] = cuda.device->name();
      for (const auto& [k, v] : cuda.device->versions()) m.versions[k] = v;
    }
    const std::string text = executor::to_json(m);
    if (!a.trace.empty()) {
      // Measured spans of the last step per rank, beside the prediction.
      std::vector<std::vector<report::MeasuredSpan>> ranks;
      for (const auto& spans : res->spans) {
        auto& out = ranks.emplace_back();
        for (const auto& sp : spans) {
          std::string stream = "compute";
          if (sp.component == executor::Component::tp_comm) stream = "tp";
          if (sp.component == executor::Component::pp_comm) stream = "pp";
          if (sp.component == executor::Component::dp_comm) stream = "dp";
          const std::string name = sp.component == executor::Component::compute
                                       ? sp.label
                                       : fmt::format("{} {}", executor::component_name(sp.component), sp.label);
          out.push_back(report::MeasuredSpan{sp.start_s, sp.end_s, stream, name});
        }
      }
      const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
      auto trace = report::chrome_trace_with_measured(pr.plan, ranks, "replay");
      if (!trace) rc = fail("run", trace.error().message);
      else if (auto st = io::write_file(a.trace, *trace, mode); !st) rc = fail("run", st.error().message);
    }
    if (!a.output.empty()) {
      const auto mode = a.force ? io::Overwrite::replace : io::Overwrite::refuse;
      if (auto st = io::write_file(a.output, text, mode); !st) rc = fail("run", st.error().message);
    }
    if (a.json) {
      fmt::print("{}", text);
    } else {
      const auto counts = pr.program.counts();
      fmt::print("planner run: mode replay, {} ({} ranks: dp={} tp={} pp={} cp={}, {} schedule, {} micro-batches)\n",
                 a.plan_file, world_size, pr.plan.layout.dp, pr.plan.layout.tp, pr.plan.layout.pp,
                 pr.plan.layout.cp, pr.plan.layout.schedule, pr.plan.training.micro_batches);
      if (cuda.device)
        fmt::print("backend cuda: {} per rank, {} GEMMs (cuBLAS {}), collectives and transfers over NCCL {}\n",
                   cuda.device->name(), pr.plan.training.precision, m.versions["cublas"], m.versions["nccl"]);
      fmt::print("rank 0 program: {} steps, {} GEMMs ({:.3g} GFLOP), {:.3g} GB memory-bound traffic, {} collectives, "
                 "{} sends, {} receives per step\n",
                 pr.program.steps.size(), counts.gemms, counts.gemm_flops / 1e9, counts.memory_bytes / 1e9,
                 counts.collectives, counts.sends, counts.recvs);
      fmt::print("step time: median {:.6f} s over {} steps after {} warm-up (min {:.6f}, max {:.6f})\n",
                 m.step_time_s, a.steps, a.warmup,
                 *std::min_element(m.step_times_s.begin(), m.step_times_s.end()),
                 *std::max_element(m.step_times_s.begin(), m.step_times_s.end()));
      for (const auto& [k, v] : m.components_s) fmt::print("  {:<10} {:.6f} s per step (max over ranks)\n", k, v);
      std::string mem;
      for (std::size_t r = 0; r < m.peak_memory_bytes.size(); ++r)
        mem += fmt::format("{}{}", r ? ", " : "", mib(m.peak_memory_bytes[r]));
      fmt::print("{} per rank: {}\n", cuda.device ? "peak device memory" : "peak memory (RSS)", mem);
      if (!a.output.empty() && rc == kExitOk) fmt::print("wrote {}\n", a.output);
    }
  }
  cuda.world.reset();
  cuda.device.reset();
  world->reset();
  return rc;
}

}  // namespace

Runner setup_run(CLI::App& sub) {
  auto a = std::make_shared<RunArgs>();
  sub.add_option("plan", a->plan_file, "Plan file (planner.plan/v1)")->required();
  sub.add_flag("--replay", a->replay,
               "Replay mode: real GEMMs (OpenBLAS) and collectives (MPI) at the plan's sharded shapes (default: the real mode, "
               "the model trained in fp32)");
  sub.add_flag("--check", a->check,
               "Real mode: compare every step (up to 3) with the single-device interpreter on rank 0 (exit 1 if off; "
               "--backend cuda: the GPU run against the CPU interpreter)");
  sub.add_option("--model", a->model, "ONNX model (default: the plan's model.path, or beside the plan file)");
  sub.add_option("--steps", a->steps, "Measured steps")->capture_default_str();
  sub.add_option("--warmup", a->warmup, "Warm-up steps, not measured")->capture_default_str();
  sub.add_option("--timeout", a->timeout_s, "Deadline of every communication call, seconds")->capture_default_str();
  sub.add_option("-o,--output", a->output, "Write the measurements (planner.measured/v1)");
  sub.add_option("--trace", a->trace,
                 "Write the last measured step of every rank beside the predicted timeline as a Chrome trace");
  sub.add_flag("--force", a->force, "Replace an existing output file");
  sub.add_flag("--json", a->json, "Print the measurements as JSON");
  sub.add_option("--max-memory", a->max_memory_gib,
                 "Per-rank memory limit of the replay, GiB (default: MemTotal / ranks on this host; cuda: the GPU's "
                 "free memory)");
  sub.add_option("--backend", a->backend,
                 "Backend: cpu (OpenBLAS GEMMs, MPI) or cuda (replay: cuBLAS GEMMs in the plan's precision, NCCL, one "
                 "GPU per rank; real mode: one-rank plans on one GPU, fp32 or bf16 storage)")
      ->capture_default_str();
  sub.add_option("--fault", a->fault, "Test hook: stall:RANK:STEP (the rank sleeps forever), crash:RANK:STEP (it raises SIGSEGV) or drop:RANK:N");
  return [a] { return run_replay(*a); };
}

}  // namespace planner::cli
