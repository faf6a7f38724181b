// CPU measurements (measure.hpp): OpenBLAS sgemm, a STREAM-like triad and
// the collectives of a runtime::Communicator.

#include "planner/calibrate/measure.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <new>
#include <numbers>
#include <string>
#include <tuple>
#include <vector>

#include <cblas.h>
#include <fmt/format.h>

#include "planner/runtime_cpu/elementwise.hpp"
#include "planner/runtime_cpu/optim.hpp"
#include "sweep.hpp"

namespace planner::calibrate {
namespace {

using core::Collective;
using detail::Budget;
using detail::mean;
using detail::now;
using detail::reduce;
using detail::time_kernel;

std::vector<float> filled(std::size_t n, float seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = seed + static_cast<float>(i % 17) * 0.001f;
  return v;
}

/// Time of one row-major C[m x n] = A[m x k] B[k x n] (cblas_sgemm).
Result<double> sgemm_time(runtime::Communicator& comm, int m, int n, int k, Budget b) {
  auto a = filled(static_cast<std::size_t>(m) * k, 0.5f);
  auto bm = filled(static_cast<std::size_t>(k) * n, 0.25f);
  std::vector<float> c(static_cast<std::size_t>(m) * n);
  return time_kernel(comm, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, bm.data(), n, 0.0f, c.data(), n);
  }, b);
}

/// VmRSS of this process in bytes (0 when /proc is unreadable).
double resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
  return 0;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  return "unknown CPU (no 'model name' in /proc/cpuinfo)";
}

double mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("MemTotal:", 0) == 0) return std::stod(line.substr(9)) * 1024.0;
  return 0;
}

Status measure_collectives(runtime::Communicator& comm, const MeasureOptions& o, CpuMeasurements& m) {
  const Budget b = o.quick ? Budget{0.002, 2} : Budget{0.05, 3};
  // Factors of 2: the shared-memory collectives fall off a cliff where the
  // buffers leave the last-level cache (the VM's reduce-scatter ran at 0.077
  // of the bus bandwidth at 16 MiB and 0.026 at 64 MiB), and a table read
  // between rows 4x apart misses the cliff by 2-4x in time.
  const auto sizes = o.quick ? detail::message_sizes(4096, 1048576, 16, comm.size())
                             : detail::message_sizes(1024, 67108864, 2, comm.size());
  std::vector<float> send = filled(static_cast<std::size_t>(sizes.back() / 4), 1.0f), recv(send.size());
  return detail::sweep_collectives(comm, comm, o, sizes, send.data(), recv.data(), b, m.collectives);
}

}  // namespace

Result<CpuMeasurements> measure_cpu(runtime::Communicator& comm, const MeasureOptions& o) {
  CpuMeasurements m;
  m.ranks = comm.size();
  PLANNER_TRY(double rss0, mean(comm, resident_bytes()));
  m.startup_resident = Bytes(rss0);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  m.host = host[0] ? host : "unknown host";
  {
    // Every rank on one host? (a 16-bit hash of the name, exact in f32)
    std::uint32_t h = 2166136261u;
    for (unsigned char ch : m.host) h = (h ^ ch) * 16777619u;
    const double tag = static_cast<double>((h ^ (h >> 16)) & 0xFFFFu);
    PLANNER_TRY(double lo, reduce(comm, tag, runtime::ReduceOp::min));
    PLANNER_TRY(double hi, reduce(comm, tag, runtime::ReduceOp::max));
    if (lo != hi)
      return make_error("the {} ranks run on more than one host; --backend cpu calibrates one host (run it on each "
                        "host, and take the network from --base or nccl-tests)",
                        comm.size());
  }
  m.cpu_model = cpu_model();
  const char* config = openblas_get_config();
  const char* core = openblas_get_corename();
  m.openblas_config = fmt::format("{} (core {})", config ? config : "?", core ? core : "?");
  m.openblas_threads = openblas_get_num_threads();
  m.host_memory = Bytes(mem_total_bytes());

  const Budget kb = o.quick ? Budget{0.002, 2} : Budget{0.05, 4};
  auto progress = [&](std::string what) {
    if (o.progress && comm.rank() == 0) o.progress(what);
  };

  // sgemm, square.
  const std::vector<int> sizes = o.quick ? std::vector<int>{16, 32, 64, 128, 256}
                                         : std::vector<int>{16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048};
  for (int n : sizes) {
    progress(fmt::format("sgemm {0}x{0}x{0}", n));
    PLANNER_TRY(double t, sgemm_time(comm, n, n, n, kb));
    m.gemm_sizes.push_back(n);
    m.gemm.push_back({2.0 * n * n * n, Seconds(t)});
  }
  // sgemm, skinny: [d x N] x [N x N].
  m.skinny_n = o.quick ? 256 : 1024;
  for (int d = 1; d <= m.skinny_n; d *= 2) {
    progress(fmt::format("sgemm {}x{}x{}", d, m.skinny_n, m.skinny_n));
    PLANNER_TRY(double t, sgemm_time(comm, d, m.skinny_n, m.skinny_n, kb));
    m.skinny_dims.push_back(d);
    m.skinny.push_back({2.0 * d * m.skinny_n * m.skinny_n, Seconds(t)});
  }
  // sgemm, aligned vs odd.
  m.aligned_n = o.quick ? 256 : 1024;
  for (int n : {m.aligned_n, m.aligned_n - 1}) {
    progress(fmt::format("sgemm {0}x{0}x{0}", n));
    PLANNER_TRY(double t, sgemm_time(comm, n, n, n, kb));
    (n == m.aligned_n ? m.aligned : m.misaligned) = Sample{2.0 * n * n * n, Seconds(t)};
  }

  // Triad over doubles.
  const std::vector<std::size_t> elems =
      o.quick ? std::vector<std::size_t>{512, 8192, 131072, 2097152}
              : std::vector<std::size_t>{256, 1024, 4096, 16384, 65536, 262144, 1048576, 2097152, 4194304, 8388608};
  for (std::size_t n : elems) {
    progress(fmt::format("triad {} elements ({:.1f} MB moved)", n, 24.0 * n / 1e6));
    std::vector<double> a(n, 0.0), bv(n, 1.0), c(n, 2.0);
    const double s = 3.0;
    Result<double> t = time_kernel(comm, [&] {
      double* __restrict pa = a.data();
      const double* __restrict pb = bv.data();
      const double* __restrict pc = c.data();
      for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    }, kb);
    if (!t) return t.error();
    volatile double sink = a[n / 2];
    (void)sink;
    m.triad.push_back({24.0 * static_cast<double>(n), Seconds(*t)});
  }

  // The CPU backend's own kernels where the model prices arithmetic the
  // triad does not show: libm's exp and erf (softmax, loss, gelu) and the
  // AdamW update (double-precision bias correction, sqrt and division).
  {
    m.special_elements = o.quick ? 8192 : 65536;
    // Each function at the arguments models give it, because libm's cost
    // depends on the argument (glibc's erf takes a polynomial below 0.84
    // and an exp-based tail above 1.25): exp at softmax-like arguments in
    // [-4, 4); erf at exact GELU's x / sqrt(2) for x ~ N(0, 1), a
    // normalized pre-activation (deterministic Box-Muller over a grid).
    runtime_cpu::Tensor soft(runtime_cpu::Shape{m.special_elements}), gelu(runtime_cpu::Shape{m.special_elements});
    for (std::int64_t i = 0; i < m.special_elements; ++i) {
      soft[i] = -4.0f + 8.0f * static_cast<float>(i % 1000) / 1000.0f;
      const double u1 = (static_cast<double>(i % 1000) + 0.5) / 1000.0;
      const double u2 = std::fmod(static_cast<double>(i) * 0.6180339887498949, 1.0);
      gelu[i] = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2) *
                                   std::numbers::sqrt2 / 2.0);
    }
    for (auto [op, out, x] : {std::tuple{runtime_cpu::UnaryOp::exp, &m.exp_per_element, &soft},
                              std::tuple{runtime_cpu::UnaryOp::erf, &m.erf_per_element, &gelu}}) {
      progress(fmt::format("{} over {} elements (the CPU backend's kernel)",
                           op == runtime_cpu::UnaryOp::exp ? "exp" : "erf", m.special_elements));
      float sink = 0;
      PLANNER_TRY(double t, time_kernel(comm, [&] { sink += runtime_cpu::unary(op, *x)[0]; }, kb));
      volatile float keep = sink;
      (void)keep;
      *out = Seconds(t / static_cast<double>(m.special_elements));
    }
    m.adam_params = o.quick ? (1 << 16) : (1 << 21);
    progress(fmt::format("AdamW step over {} parameters (the CPU backend's kernel)", m.adam_params));
    std::vector<float> w = filled(static_cast<std::size_t>(m.adam_params), 0.5f),
                       g = filled(static_cast<std::size_t>(m.adam_params), 0.01f);
    runtime_cpu::OptimState st;
    const runtime_cpu::AdamWConfig cfg;
    PLANNER_TRY(double t, time_kernel(comm, [&] { runtime_cpu::adamw_step(cfg, w, g, st); }, kb));
    m.adam_per_param = Seconds(t / static_cast<double>(m.adam_params));
  }
  PLANNER_TRY_STATUS(detail::measure_class_kernels(comm, o.quick, kb, progress, m));

  // The spread of a rank's pace (device.step_time_cv; estimate/straggler.hpp):
  // a synchronous step waits for its slowest rank, and on a shared host the
  // ranks' pace drifts (a dp=2 GPT step of ~1.4 s on this VM had one rank
  // waiting 0.13-0.45 s for the other at the gradient all-reduce). Every
  // rank runs the same sgemm calls at once, round after round.
  {
    m.step_gemm_n = 256;
    m.step_rounds = o.quick ? 6 : 30;
    const double round_s = o.quick ? 0.01 : 0.1;
    const int n = m.step_gemm_n;
    auto a = filled(static_cast<std::size_t>(n) * n, 0.5f), bm = filled(static_cast<std::size_t>(n) * n, 0.25f);
    std::vector<float> c(static_cast<std::size_t>(n) * n);
    auto gemm = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, bm.data(), n, 0.0f, c.data(), n);
    };
    progress(fmt::format("the ranks' pace: {} rounds of sgemm {} on every rank at once", m.step_rounds, n));
    gemm();
    const double t0 = now();
    gemm();
    const double one = std::max(now() - t0, 1e-7);
    PLANNER_TRY(double calls, reduce(comm, std::ceil(round_s / one), runtime::ReduceOp::max));
    m.step_calls = std::max(1L, static_cast<long>(calls));
    double sum = 0, sumsq = 0;
    for (int r = 0; r < m.step_rounds; ++r) {
      PLANNER_TRY_STATUS(comm.barrier());
      const double s = now();
      for (long i = 0; i < m.step_calls; ++i) gemm();
      const double t = now() - s;
      sum += t;
      sumsq += t * t;
    }
    const double k = static_cast<double>(m.step_rounds);
    PLANNER_TRY(double mu, mean(comm, sum / k));
    PLANNER_TRY(double second, mean(comm, sumsq / k));
    m.step_round_s = mu;
    m.step_cv = mu > 0 ? std::sqrt(std::max(0.0, second - mu * mu)) / mu : 0.0;
  }

  if (comm.size() > 1) {
    PLANNER_TRY(double before, reduce(comm, resident_bytes(), runtime::ReduceOp::max));
    PLANNER_TRY_STATUS(measure_collectives(comm, o, m));
    PLANNER_TRY(double after, reduce(comm, resident_bytes(), runtime::ReduceOp::max));
    m.communicator_resident = Bytes(std::max(0.0, after - before));
  }
  return m;
}

}  // namespace planner::calibrate
