#pragma once
/// The NCCL communicator: the `Communicator` interface on CUDA device
/// buffers (built only with PLANNER_ENABLE_CUDA=ON; docs/executor.md).
///
/// - Creation: rank 0 of a host communicator (MPI in a job, the fake in
///   tests) makes the NCCL unique id and broadcasts it over that host
///   communicator, as nccl-tests does over MPI.
/// - Every NCCL communicator is non-blocking (ncclConfig_t::blocking = 0);
///   each call enqueues on the communicator's own stream and polls
///   cudaStreamQuery and ncclCommGetAsyncError until done or the deadline,
///   when it calls ncclCommAbort. NCCL cannot say which peer is missing, so
///   the error says so; the host communicator's heartbeat is what names ranks.
/// - send/recv ignore `tag`: NCCL matches point-to-point messages per peer
///   in call order.
///
/// This header includes no CUDA or NCCL header.

#include <memory>

#include "planner/runtime/communicator.hpp"

namespace planner::runtime {

/// CUDA devices this process sees; 0 without a driver or a GPU.
int cuda_device_count();

/// An NCCL communicator over the ranks of `host` (collective: every rank of
/// `host` calls it) on CUDA device `device`, with the given deadline.
/// Requires: buffers passed to it are device memory on `device`.
Result<std::unique_ptr<Communicator>> make_nccl_communicator(Communicator& host, int device,
                                                             Seconds timeout = kDefaultTimeout);

}  // namespace planner::runtime
