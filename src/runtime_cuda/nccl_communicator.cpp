#include "planner/runtime_cuda/nccl_communicator.hpp"

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <cuda_runtime.h>
#include <nccl.h>

namespace planner::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// The NCCL type and count that move `count` elements of `t`: the float
// types as themselves (reductions are f32 only: check_reduction), every
// other type as its bytes, which is all data movement needs. Before, an
// integer tensor went out as that many f32s: the wrong byte count.
struct Wire {
  ncclDataType_t type;
  std::size_t count;
};
Wire wire(core::DType t, std::size_t count) {
  switch (t) {
    case core::DType::f32: return {ncclFloat32, count};
    case core::DType::bf16: return {ncclBfloat16, count};
    case core::DType::f16: return {ncclFloat16, count};
    default: return {ncclUint8, count * dtype_size(t)};
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  return ncclSum;
}

Clock::time_point deadline_after(Seconds s) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.value));
}

Status cuda_ok(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return {};
  return make_error("{}: CUDA error {}", what, cudaGetErrorString(e));
}

std::string nccl_text(ncclResult_t r, ncclComm_t comm) {
  std::string s = ncclGetErrorString(r);
  if (comm != nullptr) {
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && *last != '\0') s += fmt::format(" ({})", last);
  }
  return s;
}

// Waits for a non-blocking NCCL communicator to leave ncclInProgress
// (after init or split); aborts it at the deadline.
Status wait_ready(ncclComm_t comm, Seconds timeout, std::string_view what) {
  const auto until = deadline_after(timeout);
  for (int spins = 0;; poll_backoff(spins)) {
    ncclResult_t st = ncclSuccess;
    ncclCommGetAsyncError(comm, &st);
    if (st == ncclSuccess) return {};
    if (st != ncclInProgress) {
      const std::string text = nccl_text(st, comm);
      ncclCommAbort(comm);
      return make_error("{}: NCCL error {}", what, text);
    }
    if (Clock::now() >= until) {
      ncclCommAbort(comm);
      return make_error("{} did not complete within {:g} s: a peer is stalled or dead (NCCL cannot "
                        "name it; communicator aborted)",
                        what, timeout.value);
    }
  }
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, cudaStream_t stream, int device, std::string label,
                   Seconds timeout)
      : comm_(comm), stream_(stream), device_(device), label_(std::move(label)),
        timeout_(timeout) {
    ncclCommUserRank(comm_, &rank_);
    ncclCommCount(comm_, &size_);
  }
  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    if (failed_) {
      if (!aborted_) ncclCommAbort(comm_);
    } else if (ncclCommFinalize(comm_) == ncclSuccess ||
               wait_ready(comm_, timeout_, "NCCL finalize").ok()) {
      ncclCommDestroy(comm_);
    }
    if (scratch_ != nullptr) cudaFree(scratch_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Seconds timeout() const override { return timeout_; }
  void set_fault(std::optional<FaultSpec> f) override { fault_ = f; }

  Status all_reduce(void* buf, std::size_t count, core::DType dtype, ReduceOp op) override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(start(CallKind::all_reduce, k));
    PLANNER_TRY_STATUS(check_reduction(CallKind::all_reduce, k, dtype));
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_reduce, k, buf, count, "the"));
    if (dropped(k))
      PLANNER_TRY_STATUS(cuda_ok(cudaMemsetAsync(buf, 0, count * dtype_size(dtype), stream_),
                                 "all_reduce: zeroing a dropped contribution"));
    return finish(CallKind::all_reduce, k,
                  ncclAllReduce(buf, buf, count, wire(dtype, count).type, nccl_op(op), comm_, stream_));
  }

  Status all_gather(const void* send, void* recv, std::size_t cpr, core::DType dtype) override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(start(CallKind::all_gather, k));
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_gather, k, send, cpr, "send"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_gather, k, recv, cpr, "recv"));
    PLANNER_TRY(const void* src, contribution(k, send, cpr * dtype_size(dtype)));
    return finish(CallKind::all_gather, k,
                  ncclAllGather(src, recv, wire(dtype, cpr).count, wire(dtype, cpr).type, comm_, stream_));
  }

  Status reduce_scatter(const void* send, void* recv, std::size_t cpr, core::DType dtype,
                        ReduceOp op) override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(start(CallKind::reduce_scatter, k));
    PLANNER_TRY_STATUS(check_reduction(CallKind::reduce_scatter, k, dtype));
    PLANNER_TRY_STATUS(check_buffer(CallKind::reduce_scatter, k, send, cpr, "send"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::reduce_scatter, k, recv, cpr, "recv"));
    PLANNER_TRY(const void* src, contribution(k, send, cpr * size_ * dtype_size(dtype)));
    return finish(CallKind::reduce_scatter, k,
                  ncclReduceScatter(src, recv, cpr, wire(dtype, cpr).type, nccl_op(op), comm_,
                                    stream_));
  }

  Status all_to_all(const void* send, void* recv, std::size_t cpr, core::DType dtype) override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(start(CallKind::all_to_all, k));
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_to_all, k, send, cpr, "send"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_to_all, k, recv, cpr, "recv"));
    const std::size_t block = cpr * dtype_size(dtype);
    PLANNER_TRY(const void* src, contribution(k, send, block * size_));
    const Wire w = wire(dtype, cpr);
    ncclResult_t r = ncclGroupStart();
    for (int j = 0; j < size_ && (r == ncclSuccess || r == ncclInProgress); ++j) {
      r = ncclSend(static_cast<const std::byte*>(src) + j * block, w.count, w.type, j, comm_, stream_);
      if (r == ncclSuccess || r == ncclInProgress)
        r = ncclRecv(static_cast<std::byte*>(recv) + j * block, w.count, w.type, j, comm_, stream_);
    }
    const ncclResult_t end = ncclGroupEnd();
    return finish(CallKind::all_to_all, k, r == ncclSuccess || r == ncclInProgress ? end : r);
  }

  Status broadcast(void* buf, std::size_t count, core::DType dtype, int root) override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(start(CallKind::broadcast, k));
    PLANNER_TRY_STATUS(check_peer(CallKind::broadcast, k, root, size_, "root"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::broadcast, k, buf, count, "the"));
    // A dropping root broadcasts zeros in place in its scratch buffer and
    // keeps its own buffer, as in the fake.
    void* data = buf;
    if (rank_ == root && dropped(k)) {
      PLANNER_TRY(const void* z, contribution(k, buf, count * dtype_size(dtype)));
      data = const_cast<void*>(z);
    }
    return finish(CallKind::broadcast, k,
                  ncclBroadcast(data, data, wire(dtype, count).count, wire(dtype, count).type, root, comm_, stream_));
  }

  Status barrier() override {
    // An all-reduce of one float in the scratch buffer.
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(start(CallKind::barrier, k));
    PLANNER_TRY_STATUS(ensure_scratch(sizeof(float)));
    return finish(CallKind::barrier, k,
                  ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_));
  }

  Result<std::unique_ptr<Communicator>> split(int color, int key) override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(start(CallKind::split, k));
    if (color < 0) return make_error("split #{}: color {} is negative", k, color);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t child = nullptr;
    const ncclResult_t r = ncclCommSplit(comm_, color, key, &child, &cfg);
    std::string what = fmt::format("split #{}{}", k, where());
    if (r != ncclSuccess && r != ncclInProgress)
      return fail(make_error("{}: NCCL error {}", what, nccl_text(r, comm_))).error();
    if (Status ready = wait_ready(comm_, timeout_, what); !ready.ok()) {
      aborted_ = true;  // wait_ready aborted the parent
      return fail(ready.error()).error();
    }
    if (child == nullptr) return fail(make_error("{}: NCCL returned no communicator", what)).error();
    PLANNER_TRY_STATUS(wait_ready(child, timeout_, what));
    cudaStream_t stream;
    PLANNER_TRY_STATUS(cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), what));
    std::string label = fmt::format("split #{} color {}", k, color);
    if (!label_.empty()) label = label_ + "/" + label;
    return std::unique_ptr<Communicator>(
        new NcclCommunicator(child, stream, device_, std::move(label), timeout_));
  }

  Status send(const void* buf, std::size_t count, core::DType dtype, int peer, int tag) override {
    const auto n = ++p2p_calls_;
    PLANNER_TRY_STATUS(start(CallKind::send, n));
    PLANNER_TRY_STATUS(check_peer(CallKind::send, n, peer, size_, "peer"));
    const Wire w = wire(dtype, count);
    return finish(CallKind::send, n, ncclSend(buf, w.count, w.type, peer, comm_, stream_));
  }

  Status recv(void* buf, std::size_t count, core::DType dtype, int peer, int tag) override {
    const auto n = ++p2p_calls_;
    PLANNER_TRY_STATUS(start(CallKind::recv, n));
    PLANNER_TRY_STATUS(check_peer(CallKind::recv, n, peer, size_, "peer"));
    const Wire w = wire(dtype, count);
    return finish(CallKind::recv, n, ncclRecv(buf, w.count, w.type, peer, comm_, stream_));
  }

 private:
  std::string where() const { return label_.empty() ? "" : " on " + label_; }
  Status fail(Error e) {
    failed_ = e;
    return e;
  }
  Status start(CallKind, std::uint64_t) {
    if (failed_) return Error{"communicator failed earlier: " + failed_->message};
    return cuda_ok(cudaSetDevice(device_), "cudaSetDevice");
  }
  bool dropped(std::uint64_t k) const { return fault_ && fault_->rank == rank_ && fault_->nth == k; }

  Status ensure_scratch(std::size_t bytes) {
    if (bytes <= scratch_bytes_) return {};
    if (scratch_ != nullptr) cudaFree(scratch_);
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    PLANNER_TRY_STATUS(cuda_ok(cudaMalloc(&scratch_, bytes), "scratch buffer"));
    scratch_bytes_ = bytes;
    return {};
  }
  // The send buffer of collective k: `buf`, or device zeros when dropped.
  Result<const void*> contribution(std::uint64_t k, const void* buf, std::size_t bytes) {
    if (!dropped(k)) return buf;
    PLANNER_TRY_STATUS(ensure_scratch(bytes));
    PLANNER_TRY_STATUS(cuda_ok(cudaMemsetAsync(scratch_, 0, bytes, stream_), "zeroing"));
    return static_cast<const void*>(scratch_);
  }

  // Polls the stream and NCCL's async error until the call completes or the
  // deadline passes (then the communicator is aborted).
  Status finish(CallKind kind, std::uint64_t k, ncclResult_t enqueued) {
    const std::string what = fmt::format("{} #{}{}", call_kind_name(kind), k, where());
    if (enqueued != ncclSuccess && enqueued != ncclInProgress)
      return fail(make_error("{}: NCCL error {}", what, nccl_text(enqueued, comm_)));
    const auto until = deadline_after(timeout_);
    for (int spins = 0;; poll_backoff(spins)) {
      ncclResult_t st = ncclSuccess;
      ncclCommGetAsyncError(comm_, &st);
      if (st != ncclSuccess && st != ncclInProgress) {
        const std::string text = nccl_text(st, comm_);
        ncclCommAbort(comm_);
        aborted_ = true;
        return fail(make_error("{}: NCCL error {}", what, text));
      }
      if (st == ncclSuccess) {
        const cudaError_t q = cudaStreamQuery(stream_);
        if (q == cudaSuccess) return {};
        if (q != cudaErrorNotReady) return fail(cuda_ok(q, what).error());
      }
      if (Clock::now() >= until) {
        ncclCommAbort(comm_);
        aborted_ = true;
        return fail(make_error("{} did not complete within {:g} s: a peer is stalled or dead "
                               "(NCCL cannot name it; communicator aborted)",
                               what, timeout_.value));
      }
    }
  }

  ncclComm_t comm_;
  cudaStream_t stream_;
  int device_;
  std::string label_;
  Seconds timeout_;
  int rank_ = 0, size_ = 1;
  std::uint64_t calls_ = 0, p2p_calls_ = 0;
  std::optional<FaultSpec> fault_;
  std::optional<Error> failed_;
  bool aborted_ = false;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
};

}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

Result<std::unique_ptr<Communicator>> make_nccl_communicator(Communicator& host, int device,
                                                             Seconds timeout) {
  PLANNER_TRY_STATUS(cuda_ok(cudaSetDevice(device), fmt::format("cudaSetDevice({})", device)));
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (host.rank() == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) return make_error("ncclGetUniqueId: {}", ncclGetErrorString(r));
  }
  // The id travels as opaque 2-byte words over the host communicator.
  static_assert(sizeof(ncclUniqueId) % 2 == 0);
  PLANNER_TRY_STATUS(host.broadcast(&id, sizeof id / 2, core::DType::bf16, 0));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRankConfig(&comm, host.size(), id, host.rank(), &cfg);
  if (r != ncclSuccess && r != ncclInProgress)
    return make_error("ncclCommInitRankConfig (rank {} of {}): {}", host.rank(), host.size(),
                      nccl_text(r, comm));
  PLANNER_TRY_STATUS(wait_ready(comm, timeout, "NCCL init"));
  cudaStream_t stream;
  const cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    ncclCommAbort(comm);
    return cuda_ok(e, "cudaStreamCreate").error();
  }
  return std::unique_ptr<Communicator>(new NcclCommunicator(comm, stream, device, "", timeout));
}

}  // namespace planner::runtime
