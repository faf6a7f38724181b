#include "planner/runtime/communicator.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace planner::runtime {

void poll_backoff(int& spins) {
  if (++spins < 20000)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(100));
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

std::string_view call_kind_name(CallKind k) {
  switch (k) {
    case CallKind::all_reduce: return "all_reduce";
    case CallKind::all_gather: return "all_gather";
    case CallKind::reduce_scatter: return "reduce_scatter";
    case CallKind::all_to_all: return "all_to_all";
    case CallKind::broadcast: return "broadcast";
    case CallKind::barrier: return "barrier";
    case CallKind::split: return "split";
    case CallKind::send: return "send";
    case CallKind::recv: return "recv";
  }
  return "?";
}

Status check_reduction(CallKind kind, std::uint64_t call_no, core::DType dtype) {
  if (dtype != core::DType::f32)
    return make_error("{} #{}: reduction of {} (reductions are f32 only)", call_kind_name(kind),
                      call_no, dtype_name(dtype));
  return {};
}

Status check_peer(CallKind kind, std::uint64_t call_no, int peer, int size,
                  std::string_view what) {
  if (peer < 0 || peer >= size)
    return make_error("{} #{}: {} {} is not a rank of this communicator (size {})",
                      call_kind_name(kind), call_no, what, peer, size);
  return {};
}

Status check_buffer(CallKind kind, std::uint64_t call_no, const void* buf, std::size_t count,
                    std::string_view what) {
  if (buf == nullptr && count > 0)
    return make_error("{} #{}: {} buffer is null for {} elements", call_kind_name(kind), call_no,
                      what, count);
  return {};
}

void reduce_f32_into(float* dst, const float* src, std::size_t count, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      for (std::size_t i = 0; i < count; ++i) dst[i] += src[i];
      return;
    case ReduceOp::max:
      for (std::size_t i = 0; i < count; ++i) dst[i] = std::max(dst[i], src[i]);
      return;
    case ReduceOp::min:
      for (std::size_t i = 0; i < count; ++i) dst[i] = std::min(dst[i], src[i]);
      return;
  }
}

Error stall_error(const std::vector<int>& missing, CallKind kind, std::uint64_t call_no,
                  std::string_view where, Seconds timeout) {
  std::string who = missing.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < missing.size(); ++i)
    who += (i ? ", " : "") + std::to_string(missing[i]);
  const std::string on = where.empty() ? std::string() : fmt::format(" on {}", where);
  return Error{fmt::format("{} did not reach {} #{}{} within {:g} s (stalled or dead)", who,
                           call_kind_name(kind), call_no, on, timeout.value)};
}

}  // namespace planner::runtime
