#pragma once
// What `planner run` and `planner calibrate --backend cpu|cuda` share to
// launch their ranks (docs/executor.md, docs/calibrate.md): the MPI world,
// a job-wide abort, one GPU per rank, and the host and date they record.
// Private to the cli module.

#include <memory>
#include <string>
#include <string_view>

#include "planner/core/result.hpp"
#include "planner/runtime/communicator.hpp"
#include "planner/runtime/device.hpp"
#include "planner/runtime_mpi/mpi_session.hpp"

namespace planner::cli::launch {

/// `--backend cuda` in a build configured without it.
inline constexpr std::string_view kNoCudaBuild =
    "--backend cuda: this planner was built without CUDA (configure with `cmake --preset cuda` where the CUDA "
    "toolkit, cuBLAS and NCCL are installed)";

/// Now, "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now();
/// As utc_now, but SOURCE_DATE_EPOCH (seconds since 1970) when set, so that
/// the same inputs can give byte-identical files.
std::string utc_now_or_source_date();
/// This host's name ("unknown" when unreadable).
std::string hostname();

/// Ends the whole job with `code` (MpiSession::abort_job) after printing
/// "planner <cmd>: error: <message>" when `say` (rank 0 only, or every rank).
[[noreturn]] void abort_job(runtime::MpiSession& s, bool say, std::string_view cmd, std::string_view message, int code);

/// Collective: the highest rank that `failed`, or -1 when none did.
Result<float> highest_failing_rank(runtime::Communicator& comm, bool failed);

/// The message of a job whose rank `bad` could not open its GPU: `problem`
/// (this rank's own) when set, else "--backend cuda: rank N has no usable GPU".
std::string no_gpu_message(float bad, const std::string& problem);

/// This rank's GPU: its device index and the opened device.
struct RankGpu {
  int index = 0;
  std::unique_ptr<runtime::Device> device;
};
/// Opens the GPU of `rank` (its local device). Error: why not, prefixed
/// "--backend cuda: "; kNoCudaBuild without CUDA.
Result<RankGpu> open_rank_gpu(int rank);

/// --backend cuda: this rank's GPU and the NCCL world over the MPI world.
struct CudaRun {
  int index = 0;  ///< the GPU's device index
  std::unique_ptr<runtime::Device> device;
  std::unique_ptr<runtime::Communicator> world;
};
/// Opens the GPU of this rank and the NCCL communicator (collective: every
/// rank calls it). Every rank fails alike when any rank has no GPU;
/// kNoCudaBuild without CUDA.
Result<CudaRun> open_cuda(runtime::Communicator& host, Seconds timeout);

}  // namespace planner::cli::launch
