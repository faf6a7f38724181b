#pragma once
// Shared by the CPU and device sweeps (measure_cpu.cpp, measure_device.cpp):
// reductions of times over ranks, the collective timing loop and the
// message sizes. Private to the calibrate module.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "planner/calibrate/measure.hpp"

namespace planner::calibrate::detail {

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Time budgets: per round of one point, and rounds kept (fastest wins).
struct Budget {
  double round_s;
  int rounds;
};

/// Reduces one double per rank (as f32: enough for times) with `op`.
inline Result<double> reduce(runtime::Communicator& comm, double v, runtime::ReduceOp op) {
  float f = static_cast<float>(v);
  PLANNER_TRY_STATUS(comm.all_reduce(&f, 1, core::DType::f32, op));
  return static_cast<double>(f);
}

/// Mean over ranks.
inline Result<double> mean(runtime::Communicator& comm, double v) {
  PLANNER_TRY(double s, reduce(comm, v, runtime::ReduceOp::sum));
  return s / comm.size();
}

/// Per-call time of `fn` on this rank: calls doubled until one round lasts
/// `b.round_s`, then `b.rounds` rounds of that many calls; the median round
/// (the last doubling round counts as one). A training step is a sum of many
/// such calls, so it runs at their typical rate: on a shared host the
/// fastest round is a burst a step does not sustain (four calibrations of
/// this VM's fastest rounds put one GPT step's GEMMs at 0.79 to 1.11 s;
/// the executor measured about 1.0 to 1.2 s).
template <typename Fn>
double time_local(Fn&& fn, Budget b) {
  fn();  // warm: page faults, library start-up
  long calls = 1;
  std::vector<double> rounds;
  for (;;) {
    const double t0 = now();
    for (long i = 0; i < calls; ++i) fn();
    const double t = now() - t0;
    if (t >= b.round_s || calls >= (1L << 20)) {
      rounds.push_back(t / calls);
      break;
    }
    calls = std::max(calls * 2, static_cast<long>(std::ceil(calls * b.round_s / std::max(t, 1e-9) * 0.5)));
  }
  for (int r = 0; r < b.rounds; ++r) {
    const double t0 = now();
    for (long i = 0; i < calls; ++i) fn();
    rounds.push_back((now() - t0) / calls);
  }
  std::sort(rounds.begin(), rounds.end());
  const std::size_t n = rounds.size();
  return n % 2 ? rounds[n / 2] : 0.5 * (rounds[n / 2 - 1] + rounds[n / 2]);
}

/// Kernel time on every rank at once: barrier, local timing, mean.
template <typename Fn>
Result<double> time_kernel(runtime::Communicator& comm, Fn&& fn, Budget b) {
  PLANNER_TRY_STATUS(comm.barrier());
  return mean(comm, time_local(fn, b));
}

/// Collective time: every rank runs the same number of calls (agreed from
/// the slowest rank's first call); per round the slowest rank's per-call
/// time; the fastest round. `host` (host buffers) agrees and reduces the
/// times; `call` runs one collective to completion on whichever
/// communicator it uses.
template <typename Fn>
Result<double> time_collective(runtime::Communicator& host, Fn&& call, Budget b) {
  PLANNER_TRY_STATUS(call());  // warm
  PLANNER_TRY_STATUS(host.barrier());
  double t0 = now();
  PLANNER_TRY_STATUS(call());
  PLANNER_TRY(double first, reduce(host, now() - t0, runtime::ReduceOp::max));
  const long calls = std::clamp(static_cast<long>(std::ceil(b.round_s / std::max(first, 1e-7))), 1L, 20000L);
  double best = 0;
  for (int r = 0; r < b.rounds; ++r) {
    PLANNER_TRY_STATUS(host.barrier());
    t0 = now();
    for (long i = 0; i < calls; ++i) PLANNER_TRY_STATUS(call());
    PLANNER_TRY(double t, reduce(host, (now() - t0) / calls, runtime::ReduceOp::max));
    best = r == 0 ? t : std::min(best, t);
  }
  return best;
}

/// Message sizes (bytes, nccl-tests convention) from `lo` to `hi` by
/// `step`, rounded up to a multiple of 4 * ranks so every rank's block holds
/// whole f32 elements.
inline std::vector<double> message_sizes(double lo, double hi, double step, int ranks) {
  std::vector<double> out;
  const double unit = 4.0 * ranks;
  for (double s = lo; s <= hi; s *= step) out.push_back(std::ceil(s / unit) * unit);
  return out;
}

/// Times every collective of kCalibratedCollectives on `comm` over `sizes`
/// with f32 buffers `send` and `recv` of at least sizes.back() bytes (host
/// or device memory, whichever `comm` takes); appends to `out`.
inline Status sweep_collectives(runtime::Communicator& host, runtime::Communicator& comm,
                                const MeasureOptions& o, const std::vector<double>& sizes, void* send,
                                void* recv, Budget b,
                                std::array<std::vector<Sample>, core::kCollectiveCount>& out) {
  using core::Collective;
  const int n = comm.size();
  for (Collective kind : kCalibratedCollectives) {
    if (o.progress && host.rank() == 0)
      o.progress(fmt::format("timing {} on {} ranks", core::to_string(kind), n));
    for (double bytes : sizes) {
      const auto elems = static_cast<std::size_t>(bytes / 4);
      const std::size_t per_rank = elems / n;
      std::function<Status()> call;
      switch (kind) {
        case Collective::all_reduce:
          call = [&] { return comm.all_reduce(send, elems, core::DType::f32); };
          break;
        case Collective::all_gather:
          call = [&] { return comm.all_gather(send, recv, per_rank, core::DType::f32); };
          break;
        case Collective::reduce_scatter:
          call = [&] { return comm.reduce_scatter(send, recv, per_rank, core::DType::f32); };
          break;
        case Collective::all_to_all:
          call = [&] { return comm.all_to_all(send, recv, per_rank, core::DType::f32); };
          break;
        case Collective::broadcast:
          call = [&] { return comm.broadcast(send, elems, core::DType::f32, 0); };
          break;
        case Collective::send_recv:
          return make_error("calibrate: send_recv is not timed");
      }
      PLANNER_TRY(double t, time_collective(host, call, b));
      out[static_cast<std::size_t>(kind)].push_back({bytes, Seconds(t)});
    }
  }
  return Status::success();
}

/// The CPU backend's memory-bound kernels per op class (measure_kernels.cpp):
/// appends m.class_kernels. Collective.
Status measure_class_kernels(runtime::Communicator& comm, bool quick, Budget kb,
                             const std::function<void(const std::string&)>& progress, CpuMeasurements& m);

}  // namespace planner::calibrate::detail
