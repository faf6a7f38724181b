// Device measurements (measure_device.hpp): the runtime::Device's GEMMs and
// traffic kernels, its launch cost, and the device communicator's
// collectives. No CUDA header: the device is injected.

#include "planner/calibrate/measure_device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sweep.hpp"

namespace planner::calibrate {
namespace {

using detail::Budget;
using core::Precision;

/// Device time per call: one call timed to size the rounds, then rounds of
/// enough calls to last b.round_s (1..10000); the fastest round, as the
/// mean over ranks.
Result<double> time_on_device(runtime::Device& dev, runtime::Communicator& host,
                              const std::function<Status()>& enqueue, Budget b) {
  PLANNER_TRY_STATUS(host.barrier());
  PLANNER_TRY(Seconds first, dev.time(enqueue, 1));
  const int reps = static_cast<int>(std::clamp(std::ceil(b.round_s / std::max(first.value, 1e-7)), 1.0, 10000.0));
  double best = first.value;
  for (int r = 0; r < b.rounds; ++r) {
    PLANNER_TRY(Seconds t, dev.time(enqueue, reps));
    best = std::min(best, t.value);
  }
  return detail::mean(host, best);
}

/// Buffers of one GEMM shape, released when done.
class Gemm {
 public:
  explicit Gemm(runtime::Device& dev) : dev_(dev) {}
  ~Gemm() {
    for (void* p : {a_, b_, c_}) dev_.release(p);
  }
  Status setup(Precision p, std::int64_t m, std::int64_t n, std::int64_t k) {
    p_ = p;
    m_ = m;
    n_ = n;
    k_ = k;
    const auto e = static_cast<std::size_t>(core::precision_bytes(p));
    PLANNER_TRY(a_, dev_.allocate(static_cast<std::size_t>(m * k) * e));
    PLANNER_TRY(b_, dev_.allocate(static_cast<std::size_t>(k * n) * e));
    PLANNER_TRY(c_, dev_.allocate(static_cast<std::size_t>(m * n) * e));
    // Small values: no overflow in fp16, no denormals.
    PLANNER_TRY_STATUS(dev_.fill(a_, static_cast<std::size_t>(m * k), p, 0.01f));
    return dev_.fill(b_, static_cast<std::size_t>(k * n), p, 0.02f);
  }
  Status operator()() { return dev_.gemm(p_, 1, m_, n_, k_, a_, b_, c_); }

 private:
  runtime::Device& dev_;
  Precision p_ = Precision::fp32;
  std::int64_t m_ = 0, n_ = 0, k_ = 0;
  void *a_ = nullptr, *b_ = nullptr, *c_ = nullptr;
};

Result<double> gemm_time(runtime::Device& dev, runtime::Communicator& host, Precision p, std::int64_t m,
                         std::int64_t n, std::int64_t k, Budget b) {
  Gemm g(dev);
  PLANNER_TRY_STATUS(g.setup(p, m, n, k));
  return time_on_device(dev, host, [&] { return g(); }, b);
}

}  // namespace

Result<DeviceMeasurements> measure_device(runtime::Device& dev, runtime::Communicator& host,
                                          const DeviceCommFactory& make_device_comm, const MeasureOptions& o) {
  DeviceMeasurements m;
  m.ranks = host.size();
  m.device = dev.name();
  m.versions = dev.versions();
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
  m.host = name[0] ? name : "unknown host";
  PLANNER_TRY(runtime::DeviceMemory mem0, dev.memory());
  m.total_memory = mem0.total;
  PLANNER_TRY(double used0, detail::mean(host, mem0.total.value - mem0.free.value));
  m.context_memory = Bytes(used0);

  const Budget kb = o.quick ? Budget{0.002, 2} : Budget{0.02, 3};
  auto progress = [&](const std::string& what) {
    if (o.progress && host.rank() == 0) o.progress(what);
  };

  // Square GEMMs in every precision.
  m.gemm_sizes = o.quick ? std::vector<int>{64, 128, 256, 512, 1024}
                         : std::vector<int>{128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192};
  for (int i = 0; i < runtime::kDevicePrecisionCount; ++i) {
    const auto p = static_cast<Precision>(i);
    progress(fmt::format("{} GEMMs n = {}..{}", core::precision_name(p), m.gemm_sizes.front(), m.gemm_sizes.back()));
    for (int n : m.gemm_sizes) {
      PLANNER_TRY(double t, gemm_time(dev, host, p, n, n, n, kb));
      m.gemm[static_cast<std::size_t>(i)].push_back({2.0 * n * n * n, Seconds(t)});
    }
  }
  // Skinny bf16: [d x N] x [N x N].
  m.skinny_n = o.quick ? 1024 : 8192;
  progress(fmt::format("bf16 GEMMs [d x {0}] x [{0} x {0}]", m.skinny_n));
  for (int d = 1; d <= m.skinny_n; d *= 2) {
    PLANNER_TRY(double t, gemm_time(dev, host, Precision::bf16, d, m.skinny_n, m.skinny_n, kb));
    m.skinny_dims.push_back(d);
    m.skinny.push_back({2.0 * d * m.skinny_n * m.skinny_n, Seconds(t)});
  }
  // Aligned vs odd, bf16.
  m.aligned_n = o.quick ? 512 : 4096;
  for (int n : {m.aligned_n, m.aligned_n - 1}) {
    PLANNER_TRY(double t, gemm_time(dev, host, Precision::bf16, n, n, n, kb));
    (n == m.aligned_n ? m.aligned : m.misaligned) = Sample{2.0 * n * n * n, Seconds(t)};
  }

  // Copy traffic: S/2 read from one buffer, S/2 written to another.
  const double hi = o.quick ? 64.0 * (1 << 20) : 2048.0 * (1 << 20);
  {
    PLANNER_TRY(void* src, dev.allocate(static_cast<std::size_t>(hi / 2)));
    PLANNER_TRY(void* dst, dev.allocate(static_cast<std::size_t>(hi / 2)));
    PLANNER_TRY_STATUS(dev.fill(src, static_cast<std::size_t>(hi / 8), Precision::fp32, 1e-3f));
    progress(fmt::format("copy traffic 64 KiB..{:.0f} MiB", hi / (1 << 20)));
    Status st;
    for (double s = 65536; s <= hi && st.ok(); s *= 4) {
      auto t = time_on_device(dev, host, [&] { return dev.traffic(src, dst, static_cast<std::size_t>(s / 2), s / 2, s / 2); }, kb);
      if (!t) st = t.error();
      else m.copy.push_back({s, Seconds(*t)});
    }
    // Launch + synchronize: a 16-byte write, host-timed with a synchronize
    // after each call, minus its back-to-back device time.
    if (st.ok()) {
      progress("launch + synchronize round trip");
      auto dev_t = time_on_device(dev, host, [&] { return dev.traffic(src, dst, 16, 0, 16); }, kb);
      if (!dev_t) st = dev_t.error();
      double best = 1e30;
      for (int r = 0; r < 3 && st.ok(); ++r) {
        const double t0 = detail::now();
        for (int i = 0; i < 200 && st.ok(); ++i) {
          st = dev.traffic(src, dst, 16, 0, 16);
          if (st.ok()) st = dev.synchronize();
        }
        best = std::min(best, (detail::now() - t0) / 200);
      }
      if (st.ok()) {
        auto host_t = detail::mean(host, best);
        if (!host_t) st = host_t.error();
        else m.launch_sync = Seconds(std::max(0.0, *host_t - *dev_t));
      }
    }
    dev.release(src);
    dev.release(dst);
    PLANNER_TRY_STATUS(st);
  }

  if (host.size() > 1) {
    PLANNER_TRY_STATUS(dev.synchronize());
    PLANNER_TRY(runtime::DeviceMemory before, dev.memory());
    PLANNER_TRY(auto comm, make_device_comm());
    const Budget b = o.quick ? Budget{0.002, 2} : Budget{0.05, 3};
    const auto sizes = o.quick ? detail::message_sizes(4096, 1048576, 16, host.size())
                               : detail::message_sizes(1024, 268435456, 4, host.size());
    const auto bytes = static_cast<std::size_t>(sizes.back());
    PLANNER_TRY(void* send, dev.allocate(bytes));
    PLANNER_TRY(void* recv, dev.allocate(bytes));
    Status st = dev.fill(send, bytes / 4, Precision::fp32, 1e-3f);
    if (st.ok()) st = dev.synchronize();
    if (st.ok()) st = detail::sweep_collectives(host, *comm, o, sizes, send, recv, b, m.collectives);
    dev.release(send);
    dev.release(recv);
    PLANNER_TRY_STATUS(st);
    PLANNER_TRY(runtime::DeviceMemory after, dev.memory());
    PLANNER_TRY(double grown, detail::reduce(host, before.free.value - after.free.value, runtime::ReduceOp::max));
    m.communicator_memory = Bytes(std::max(0.0, grown));
  }
  return m;
}

}  // namespace planner::calibrate
