// Launching ranks (launch.hpp).

#include "launch.hpp"

#include <unistd.h>

#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "planner/cli/command.hpp"
#ifdef PLANNER_WITH_CUDA
#include "planner/runtime_cuda/cuda_device.hpp"
#include "planner/runtime_cuda/nccl_communicator.hpp"
#endif

namespace planner::cli::launch {

namespace {

std::string iso_utc(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string utc_now() { return iso_utc(std::time(nullptr)); }

std::string utc_now_or_source_date() {
  std::time_t t = std::time(nullptr);
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch && *epoch) {
    char* end = nullptr;
    const long long v = std::strtoll(epoch, &end, 10);
    if (end && *end == '\0' && v >= 0) t = static_cast<std::time_t>(v);
  }
  return iso_utc(t);
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

void abort_job(runtime::MpiSession& s, bool say, std::string_view cmd, std::string_view message, int code) {
  if (say) fail(cmd, message);
  s.abort_job(code);
}

Result<float> highest_failing_rank(runtime::Communicator& comm, bool failed) {
  float bad = failed ? static_cast<float>(comm.rank()) : -1.0f;
  PLANNER_TRY_STATUS(comm.all_reduce(&bad, 1, core::DType::f32, runtime::ReduceOp::max));
  return bad;
}

std::string no_gpu_message(float bad, const std::string& problem) {
  return problem.empty() ? fmt::format("--backend cuda: rank {} has no usable GPU", bad) : problem;
}

Result<RankGpu> open_rank_gpu(int rank) {
#ifndef PLANNER_WITH_CUDA
  (void)rank;
  return make_error("{}", kNoCudaBuild);
#else
  RankGpu out;
  auto index = runtime::local_cuda_device(rank);
  if (!index) return make_error("--backend cuda: {}", index.error().message);
  out.index = *index;
  auto d = runtime::make_cuda_device(*index);
  if (!d) return make_error("--backend cuda: {}", d.error().message);
  out.device = std::move(*d);
  return out;
#endif
}

Result<CudaRun> open_cuda(runtime::Communicator& host, Seconds timeout) {
#ifndef PLANNER_WITH_CUDA
  (void)host, (void)timeout;
  return make_error("{}", kNoCudaBuild);
#else
  CudaRun out;
  std::string problem;
  auto gpu = open_rank_gpu(host.rank());
  if (!gpu) {
    problem = gpu.error().message;
  } else {
    out.index = gpu->index;
    out.device = std::move(gpu->device);
  }
  PLANNER_TRY(const float bad, highest_failing_rank(host, !problem.empty()));
  if (bad >= 0) return make_error("{}", no_gpu_message(bad, problem));
  PLANNER_TRY(out.world, runtime::make_nccl_communicator(host, out.index, timeout));
  return out;
#endif
}

}  // namespace planner::cli::launch
