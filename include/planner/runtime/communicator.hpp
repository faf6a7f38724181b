#pragma once
/// The executor's communicator: one abstract interface with MPI-shaped
/// collectives on raw buffers, implemented by an in-process fake
/// (`fake_communicator.hpp`, unit tests), MPI (`runtime_mpi`, host buffers)
/// and NCCL (`runtime_cuda`, device buffers).
///
/// Design notes (docs/executor.md):
/// - Every call returns a Status; nothing throws or exits. A failed
///   communicator stays failed: later calls return the same error.
/// - Every blocking call honours the communicator's deadline (its timeout,
///   fixed at construction, default 300 s). When the deadline passes the
///   error names the rank(s) that did not arrive, e.g.
///   `rank 2 did not reach all_reduce #17 within 5 s (stalled or dead)`.
/// - Collectives are numbered per communicator from 1 in call order (split
///   and barrier count too; send/recv do not): `#17` is the 17th collective
///   this rank called on this communicator. Every member must call the same
///   collectives in the same order with the same counts.
/// - Reductions are defined for f32 only. bf16 and f16 are opaque 2-byte
///   types: all_gather, all_to_all, broadcast and send/recv move them, a
///   reduction on them is an error.
///
/// This header (and the whole `runtime` module) includes no MPI or CUDA
/// header: implementations hide them in their sources.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "planner/core/dtype.hpp"
#include "planner/core/result.hpp"
#include "planner/core/units.hpp"
#include "planner/runtime/fault.hpp"

namespace planner::runtime {

/// Element types a communicator moves are core::DType's f32 (IEEE binary32;
/// the only type reductions accept), bf16 and f16 (both moved as opaque 2
/// bytes). Requires (every call below): dtype is one of these three.

/// Element-wise reduction of all_reduce and reduce_scatter.
enum class ReduceOp : std::uint8_t { sum, max, min };
std::string_view reduce_op_name(ReduceOp op);

/// The calls a communicator counts and names in its errors.
enum class CallKind : std::uint8_t {
  all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, barrier, split, send, recv,
};
std::string_view call_kind_name(CallKind k);

/// Between two polls of an operation in flight (the MPI and NCCL
/// communicators' wait loops): yield for the first ~20,000 polls (some
/// 10-50 ms), then sleep 100 us. Spinning first matters: MPI's non-blocking
/// collectives progress only inside MPI_Test, and a GPU collective is seen
/// done only when polled, so a rank that sleeps after a short wait (one that
/// arrived ~0.2 ms before its peer) stretches every later round of the
/// operation. Long waits (a stalled peer, a pipeline bubble) still sleep.
void poll_backoff(int& spins);

/// The default deadline of a blocking call.
inline constexpr Seconds kDefaultTimeout{300.0};

/// An MPI-shaped communicator over `size()` ranks. Buffers are raw memory of
/// `count` elements of a DType; where the interface says "per rank" a buffer
/// holds `size()` blocks of that many elements, block j belonging to rank j.
/// Not thread-safe: one thread drives one communicator.
class Communicator {
 public:
  virtual ~Communicator() = default;

  /// This rank, in [0, size()).
  virtual int rank() const = 0;
  /// Number of ranks.
  virtual int size() const = 0;
  /// The deadline of every blocking call.
  virtual Seconds timeout() const = 0;

  /// In place: buf[i] = op over ranks j of buf_j[i]. Requires: dtype f32.
  virtual Status all_reduce(void* buf, std::size_t count, core::DType dtype,
                            ReduceOp op = ReduceOp::sum) = 0;
  /// recv block j (count_per_rank elements) = send of rank j.
  /// Requires: recv holds size() * count_per_rank elements; send and recv
  /// do not overlap.
  virtual Status all_gather(const void* send, void* recv, std::size_t count_per_rank,
                            core::DType dtype) = 0;
  /// recv[i] = op over ranks j of block rank() of send_j.
  /// Requires: send holds size() * count_per_rank elements; dtype f32.
  virtual Status reduce_scatter(const void* send, void* recv, std::size_t count_per_rank,
                                core::DType dtype, ReduceOp op = ReduceOp::sum) = 0;
  /// recv block j = block rank() of send_j. Both hold size() blocks.
  virtual Status all_to_all(const void* send, void* recv, std::size_t count_per_rank,
                            core::DType dtype) = 0;
  /// Sends count elements to `peer`; matched by (source, tag) in order.
  virtual Status send(const void* buf, std::size_t count, core::DType dtype, int peer, int tag) = 0;
  /// Receives exactly count elements sent by `peer` with `tag`.
  virtual Status recv(void* buf, std::size_t count, core::DType dtype, int peer, int tag) = 0;
  /// True when send_async() returns before the receiver matches the send
  /// (MPI: a posted MPI_Isend; the fake: its sends are buffered). Otherwise
  /// send_async() is send(), which may wait for the receiver, and a caller
  /// must order its transfers so that blocking sends cannot deadlock.
  virtual bool async_sends() const { return false; }
  /// Posts a send, matched like send(); `buf` must stay unchanged until
  /// wait_sends() returns. Pipeline stages send this way, as Megatron's
  /// batched isend/irecv do: the sender goes on computing.
  virtual Status send_async(const void* buf, std::size_t count, core::DType dtype, int peer, int tag) {
    return send(buf, count, dtype, peer, tag);
  }
  /// Waits for every send_async() posted so far (the deadline applies).
  virtual Status wait_sends() { return {}; }
  /// buf on every rank = buf on `root`.
  virtual Status broadcast(void* buf, std::size_t count, core::DType dtype, int root) = 0;
  /// Returns once every rank has called barrier.
  virtual Status barrier() = 0;
  /// The ranks that passed the same `color` form a sub-communicator, ordered
  /// by (key, rank). Requires: color >= 0. The child inherits the timeout,
  /// has its own collective numbering and no fault.
  virtual Result<std::unique_ptr<Communicator>> split(int color, int key) = 0;

  /// Test hook: on the collective numbered `fault.nth`, rank `fault.rank`
  /// contributes zeros instead of its data (docs/executor.md). std::nullopt
  /// clears it. Applies to this communicator only.
  virtual void set_fault(std::optional<FaultSpec> fault) = 0;
};

/// Argument checks shared by the implementations. Each returns an error
/// naming the call and argument, e.g. "all_reduce #3: reduction of bf16 (f32 only)".
Status check_reduction(CallKind kind, std::uint64_t call_no, core::DType dtype);
Status check_peer(CallKind kind, std::uint64_t call_no, int peer, int size,
                  std::string_view what);
Status check_buffer(CallKind kind, std::uint64_t call_no, const void* buf, std::size_t count,
                    std::string_view what);

/// dst[i] = op(dst[i], src[i]) for f32 buffers of `count` elements.
void reduce_f32_into(float* dst, const float* src, std::size_t count, ReduceOp op);

/// The one-line stall error: "rank 2 did not reach all_reduce #17 within 5 s
/// (stalled or dead)"; several ranks read "ranks 1, 3 did not reach ...".
/// `where` (may be empty) names a sub-communicator: "... all_reduce #4 on tp ...".
Error stall_error(const std::vector<int>& missing, CallKind kind, std::uint64_t call_no,
                  std::string_view where, Seconds timeout);

}  // namespace planner::runtime
