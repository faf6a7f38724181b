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
#include <string>
#include <vector>

#include <cblas.h>
#include <fmt/format.h>

namespace planner::calibrate {
namespace {

using cluster::Collective;
using Clock = std::chrono::steady_clock;

double now() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

/// Time budgets: per round of one point, and rounds kept (fastest wins).
struct Budget {
  double round_s;
  int rounds;
};

/// Per-call time of `fn` on this rank: calls doubled until one round lasts
/// `b.round_s`, then `b.rounds` rounds of that many calls; the fastest.
template <typename Fn>
double time_local(Fn&& fn, Budget b) {
  fn();  // warm: page faults, library start-up
  long calls = 1;
  double best = 0;
  for (;;) {
    const double t0 = now();
    for (long i = 0; i < calls; ++i) fn();
    const double t = now() - t0;
    best = t / calls;
    if (t >= b.round_s || calls >= (1L << 20)) break;
    calls = std::max(calls * 2, static_cast<long>(std::ceil(calls * b.round_s / std::max(t, 1e-9) * 0.5)));
  }
  for (int r = 0; r < b.rounds; ++r) {
    const double t0 = now();
    for (long i = 0; i < calls; ++i) fn();
    best = std::min(best, (now() - t0) / calls);
  }
  return best;
}

/// Reduces one double per rank (as f32: enough for times) with `op`.
Result<double> reduce(runtime::Communicator& comm, double v, runtime::ReduceOp op) {
  float f = static_cast<float>(v);
  PLANNER_TRY_STATUS(comm.all_reduce(&f, 1, runtime::DType::f32, op));
  return static_cast<double>(f);
}

/// Mean over ranks.
Result<double> mean(runtime::Communicator& comm, double v) {
  PLANNER_TRY(double s, reduce(comm, v, runtime::ReduceOp::sum));
  return s / comm.size();
}

/// Kernel time on every rank at once: barrier, local timing, mean.
template <typename Fn>
Result<double> time_kernel(runtime::Communicator& comm, Fn&& fn, Budget b) {
  PLANNER_TRY_STATUS(comm.barrier());
  return mean(comm, time_local(fn, b));
}

/// Collective time: every rank runs the same number of calls (agreed from
/// the slowest rank's first call); per round the slowest rank's per-call
/// time; the fastest round.
template <typename Fn>
Result<double> time_collective(runtime::Communicator& comm, Fn&& call, Budget b) {
  PLANNER_TRY_STATUS(call());  // warm
  PLANNER_TRY_STATUS(comm.barrier());
  double t0 = now();
  PLANNER_TRY_STATUS(call());
  PLANNER_TRY(double first, reduce(comm, now() - t0, runtime::ReduceOp::max));
  const long calls = std::clamp(static_cast<long>(std::ceil(b.round_s / std::max(first, 1e-7))), 1L, 20000L);
  double best = 0;
  for (int r = 0; r < b.rounds; ++r) {
    PLANNER_TRY_STATUS(comm.barrier());
    t0 = now();
    for (long i = 0; i < calls; ++i) PLANNER_TRY_STATUS(call());
    PLANNER_TRY(double t, reduce(comm, (now() - t0) / calls, runtime::ReduceOp::max));
    best = r == 0 ? t : std::min(best, t);
  }
  return best;
}

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

/// Message sizes (bytes, nccl-tests convention), rounded up to a multiple
/// of 4 * ranks so every rank's block holds whole f32 elements.
std::vector<double> message_sizes(bool quick, int ranks) {
  std::vector<double> out;
  const double unit = 4.0 * ranks;
  const double lo = quick ? 4096 : 1024, hi = quick ? 1048576 : 67108864;
  for (double s = lo; s <= hi; s *= quick ? 16 : 4) out.push_back(std::ceil(s / unit) * unit);
  return out;
}

Status measure_collectives(runtime::Communicator& comm, const MeasureOptions& o, CpuMeasurements& m) {
  const int n = comm.size();
  const Budget b = o.quick ? Budget{0.002, 2} : Budget{0.05, 3};
  for (Collective kind : kCalibratedCollectives) {
    if (o.progress && comm.rank() == 0) o.progress(fmt::format("timing {} on {} ranks", cluster::collective_name(kind), n));
    for (double bytes : message_sizes(o.quick, n)) {
      const auto elems = static_cast<std::size_t>(bytes / 4);
      const std::size_t per_rank = elems / n;
      std::vector<float> send = filled(elems, 1.0f), recv(elems);
      std::function<Status()> call;
      switch (kind) {
        case Collective::all_reduce:
          call = [&] { return comm.all_reduce(send.data(), elems, runtime::DType::f32); };
          break;
        case Collective::all_gather:
          call = [&] { return comm.all_gather(send.data(), recv.data(), per_rank, runtime::DType::f32); };
          break;
        case Collective::reduce_scatter:
          call = [&] { return comm.reduce_scatter(send.data(), recv.data(), per_rank, runtime::DType::f32); };
          break;
        case Collective::all_to_all:
          call = [&] { return comm.all_to_all(send.data(), recv.data(), per_rank, runtime::DType::f32); };
          break;
        case Collective::broadcast:
          call = [&] { return comm.broadcast(send.data(), elems, runtime::DType::f32, 0); };
          break;
        case Collective::send_recv:
          return make_error("calibrate: send_recv is not timed");
      }
      PLANNER_TRY(double t, time_collective(comm, call, b));
      m.collectives[static_cast<std::size_t>(kind)].push_back({bytes, Seconds(t)});
    }
  }
  return Status::success();
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

  const Budget kb = o.quick ? Budget{0.002, 2} : Budget{0.05, 3};
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

  if (comm.size() > 1) {
    PLANNER_TRY(double before, reduce(comm, resident_bytes(), runtime::ReduceOp::max));
    PLANNER_TRY_STATUS(measure_collectives(comm, o, m));
    PLANNER_TRY(double after, reduce(comm, resident_bytes(), runtime::ReduceOp::max));
    m.communicator_resident = Bytes(std::max(0.0, after - before));
  }
  return m;
}

}  // namespace planner::calibrate
