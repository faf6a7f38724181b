// The MPI communicator: every call is a non-blocking MPI operation polled
// against the deadline; see heartbeat.hpp for how a stalled rank is named.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>

#include "heartbeat.hpp"

namespace planner::runtime::mpi_detail {
namespace {

using Clock = std::chrono::steady_clock;

MPI_Datatype mpi_type(core::DType t) { return t == core::DType::f32 ? MPI_FLOAT : MPI_UINT16_T; }

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_SUM;
}

std::string describe(const Answer& a) {
  if (!a.in_call) return "alive, not in a communicator call";
  return fmt::format("alive in {} #{}{}", call_kind_name(a.kind), a.k,
                     a.label.empty() ? "" : " on " + a.label);
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, Heartbeat& hb, std::string label, std::vector<int> world,
                  Seconds timeout)
      : comm_(comm), hb_(hb), label_(std::move(label)), world_(std::move(world)),
        timeout_(timeout) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
  }
  ~MpiCommunicator() override {
    // A failed communicator may have operations in flight that will never
    // complete; freeing it could wait. The job is aborted anyway.
    if (!failed_) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(world_.size()); }
  Seconds timeout() const override { return timeout_; }
  void set_fault(std::optional<FaultSpec> f) override { fault_ = f; }

  Status all_reduce(void* buf, std::size_t count, core::DType dtype, ReduceOp op) override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_reduction(CallKind::all_reduce, k, dtype));
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_reduce, k, buf, count, "the"));
    PLANNER_TRY_STATUS(check_count(CallKind::all_reduce, k, count));
    if (dropped(k)) std::memset(buf, 0, count * dtype_size(dtype));  // in place: buf is mine
    MPI_Request req;
    const int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, static_cast<int>(count), mpi_type(dtype),
                                  mpi_op(op), comm_, &req);
    return finish(rc, req, CallKind::all_reduce, k);
  }

  Status all_gather(const void* send, void* recv, std::size_t cpr, core::DType dtype) override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_gather, k, send, cpr, "send"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_gather, k, recv, cpr, "recv"));
    PLANNER_TRY_STATUS(check_count(CallKind::all_gather, k, cpr * size()));
    const void* src = contribution(k, send, cpr, dtype);
    MPI_Request req;
    const int rc = MPI_Iallgather(src, static_cast<int>(cpr), mpi_type(dtype), recv,
                                  static_cast<int>(cpr), mpi_type(dtype), comm_, &req);
    return finish(rc, req, CallKind::all_gather, k);
  }

  Status reduce_scatter(const void* send, void* recv, std::size_t cpr, core::DType dtype,
                        ReduceOp op) override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_reduction(CallKind::reduce_scatter, k, dtype));
    PLANNER_TRY_STATUS(check_buffer(CallKind::reduce_scatter, k, send, cpr, "send"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::reduce_scatter, k, recv, cpr, "recv"));
    PLANNER_TRY_STATUS(check_count(CallKind::reduce_scatter, k, cpr * size()));
    const void* src = contribution(k, send, cpr * size(), dtype);
    MPI_Request req;
    const int rc = MPI_Ireduce_scatter_block(src, recv, static_cast<int>(cpr), mpi_type(dtype),
                                             mpi_op(op), comm_, &req);
    return finish(rc, req, CallKind::reduce_scatter, k);
  }

  Status all_to_all(const void* send, void* recv, std::size_t cpr, core::DType dtype) override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_to_all, k, send, cpr, "send"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_to_all, k, recv, cpr, "recv"));
    PLANNER_TRY_STATUS(check_count(CallKind::all_to_all, k, cpr * size()));
    const void* src = contribution(k, send, cpr * size(), dtype);
    MPI_Request req;
    const int rc = MPI_Ialltoall(src, static_cast<int>(cpr), mpi_type(dtype), recv,
                                 static_cast<int>(cpr), mpi_type(dtype), comm_, &req);
    return finish(rc, req, CallKind::all_to_all, k);
  }

  Status broadcast(void* buf, std::size_t count, core::DType dtype, int root) override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_peer(CallKind::broadcast, k, root, size(), "root"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::broadcast, k, buf, count, "the"));
    PLANNER_TRY_STATUS(check_count(CallKind::broadcast, k, count));
    // A dropping root sends zeros and keeps its own buffer, as in the fake.
    void* data = rank_ == root ? const_cast<void*>(contribution(k, buf, count, dtype)) : buf;
    MPI_Request req;
    const int rc =
        MPI_Ibcast(data, static_cast<int>(count), mpi_type(dtype), root, comm_, &req);
    return finish(rc, req, CallKind::broadcast, k);
  }

  Status barrier() override {
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(check_failed());
    MPI_Request req;
    return finish(MPI_Ibarrier(comm_, &req), req, CallKind::barrier, k);
  }

  Result<std::unique_ptr<Communicator>> split(int color, int key) override {
    // MPI_Comm_split blocks, so first gather every (color, key) under the
    // deadline; once all ranks have arrived the split itself cannot stall
    // on a live job.
    const auto k = ++calls_;
    PLANNER_TRY_STATUS(check_failed());
    if (color < 0) return make_error("split #{}: color {} is negative", k, color);
    const int mine[2] = {color, key};
    std::vector<int> all(2 * world_.size());
    MPI_Request req;
    PLANNER_TRY_STATUS(finish(MPI_Iallgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm_,
                                             &req),
                              req, CallKind::split, k));
    std::vector<std::pair<int, int>> members;  // (key, rank)
    for (int j = 0; j < size(); ++j)
      if (all[2 * j] == color) members.emplace_back(all[2 * j + 1], j);
    std::sort(members.begin(), members.end());
    std::vector<int> world;
    for (const auto& m : members) world.push_back(world_[m.second]);
    MPI_Comm child;
    const int rc = MPI_Comm_split(comm_, color, key, &child);
    if (rc != MPI_SUCCESS)
      return fail(make_error("split #{}: MPI_Comm_split failed: {}", k, mpi_error_text(rc))).error();
    std::string label = fmt::format("split #{} color {}", k, color);
    if (!label_.empty()) label = label_ + "/" + label;
    return make_mpi_communicator(child, hb_, std::move(label), std::move(world), timeout_);
  }

  Status send(const void* buf, std::size_t count, core::DType dtype, int peer, int tag) override {
    return p2p(CallKind::send, const_cast<void*>(buf), count, dtype, peer, tag);
  }
  Status recv(void* buf, std::size_t count, core::DType dtype, int peer, int tag) override {
    return p2p(CallKind::recv, buf, count, dtype, peer, tag);
  }
  bool async_sends() const override { return true; }
  Status send_async(const void* buf, std::size_t count, core::DType dtype, int peer, int tag) override {
    const auto n = ++p2p_calls_;
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_peer(CallKind::send, n, peer, size(), "peer"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::send, n, buf, count, "the"));
    PLANNER_TRY_STATUS(check_count(CallKind::send, n, count));
    Pending s{MPI_REQUEST_NULL, peer, tag, n};
    const int rc = MPI_Isend(buf, static_cast<int>(count), mpi_type(dtype), peer, tag, comm_, &s.req);
    if (rc != MPI_SUCCESS)
      return fail(make_error("send to rank {} (tag {}){}: {}", world_[peer], tag, where(), mpi_error_text(rc)));
    pending_.push_back(s);
    return {};
  }
  Status wait_sends() override {
    PLANNER_TRY_STATUS(check_failed());
    while (!pending_.empty()) {
      Pending s = pending_.front();
      pending_.erase(pending_.begin());
      if (poll(s.req, MPI_STATUS_IGNORE, CallKind::send, s.n) != Poll::done) {
        const auto answers = hb_.probe(label_, {world_[s.peer]}, grace());
        hb_.leave();
        const auto it = answers.find(world_[s.peer]);
        return fail(Error{fmt::format("send to rank {} (tag {}){}: rank {} did not receive within {:g} s ({})",
                                      world_[s.peer], s.tag, where(), world_[s.peer], timeout_.value,
                                      it == answers.end() ? "stalled or dead" : describe(it->second))});
      }
    }
    return {};
  }

 private:
  std::string where() const { return label_.empty() ? "" : " on " + label_; }
  Status check_failed() const {
    if (failed_) return Error{"communicator failed earlier: " + failed_->message};
    return {};
  }
  Status fail(Error e) {
    failed_ = e;
    return e;
  }
  static Status check_count(CallKind kind, std::uint64_t k, std::size_t n) {
    if (n > static_cast<std::size_t>(INT_MAX))
      return make_error("{} #{}: {} elements exceed MPI's int count", call_kind_name(kind), k, n);
    return {};
  }
  bool dropped(std::uint64_t k) const { return fault_ && fault_->rank == rank_ && fault_->nth == k; }
  // The send buffer of collective k: `buf`, or zeros when the fault drops it.
  const void* contribution(std::uint64_t k, const void* buf, std::size_t elems, core::DType dtype) {
    if (!dropped(k)) return buf;
    zeros_.assign(elems * dtype_size(dtype), std::byte{0});
    return zeros_.data();
  }

  Status p2p(CallKind kind, void* buf, std::size_t count, core::DType dtype, int peer, int tag) {
    const auto n = ++p2p_calls_;
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_peer(kind, n, peer, size(), "peer"));
    PLANNER_TRY_STATUS(check_buffer(kind, n, buf, count, "the"));
    PLANNER_TRY_STATUS(check_count(kind, n, count));
    MPI_Request req;
    const int rc =
        kind == CallKind::send
            ? MPI_Isend(buf, static_cast<int>(count), mpi_type(dtype), peer, tag, comm_, &req)
            : MPI_Irecv(buf, static_cast<int>(count), mpi_type(dtype), peer, tag, comm_, &req);
    const std::string head =
        fmt::format("{} rank {} (tag {}){}", kind == CallKind::send ? "send to" : "recv from",
                    world_[peer], tag, where());
    if (rc != MPI_SUCCESS) return fail(make_error("{}: {}", head, mpi_error_text(rc)));
    MPI_Status st;
    if (poll(req, &st, kind, n) != Poll::done) {
      const auto answers = hb_.probe(label_, {world_[peer]}, grace());
      hb_.leave();
      const auto it = answers.find(world_[peer]);
      return fail(Error{fmt::format(
          "{}: rank {} did not {} within {:g} s ({})", head, world_[peer],
          kind == CallKind::send ? "receive" : "send", timeout_.value,
          it == answers.end() ? "stalled or dead" : describe(it->second))});
    }
    if (kind == CallKind::recv) {
      int got = 0;
      MPI_Get_count(&st, mpi_type(dtype), &got);
      if (static_cast<std::size_t>(got) != count)
        return make_error("recv from rank {} (tag {}): expected {} x {}, got {}", world_[peer],
                          tag, count, dtype_name(dtype), got);
    }
    return {};
  }

  Seconds grace() const { return Seconds(std::min(1.0, timeout_.value / 2)); }

  enum class Poll { done, timed_out, verdict };

  // Polls req until it completes, the deadline passes or (collectives only)
  // a peer sends the verdict on call k, answering heartbeat queries meanwhile.
  Poll poll(MPI_Request& req, MPI_Status* st, CallKind kind, std::uint64_t k) {
    const bool collective = kind != CallKind::send && kind != CallKind::recv;
    hb_.enter(label_, kind, k);
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(timeout_.value));
    Poll result = Poll::timed_out;
    for (int spins = 0;; poll_backoff(spins)) {
      int done = 0;
      MPI_Test(&req, &done, st);
      if (done) {
        result = Poll::done;
        break;
      }
      hb_.service();
      if (collective && hb_.verdict(label_, k)) {
        result = Poll::verdict;
        break;
      }
      if (Clock::now() >= until) break;
    }
    // On a timeout the rank stays "in the call" while it names the missing.
    if (result != Poll::timed_out) hb_.leave();
    return result;
  }

  // Completes collective k, or names who did not reach it.
  Status finish(int rc, MPI_Request& req, CallKind kind, std::uint64_t k) {
    if (rc != MPI_SUCCESS)
      return fail(make_error("{} #{}{}: {}", call_kind_name(kind), k, where(), mpi_error_text(rc)));
    switch (poll(req, MPI_STATUS_IGNORE, kind, k)) {
      case Poll::done: return {};
      case Poll::verdict: return fail(Error{*hb_.verdict(label_, k)});  // a peer named them
      case Poll::timed_out: break;
    }
    Error e = name_the_missing(kind, k);
    hb_.leave();
    return fail(std::move(e));
  }

  Error name_the_missing(CallKind kind, std::uint64_t k) {
    std::vector<int> peers;
    for (int j = 0; j < size(); ++j)
      if (j != rank_) peers.push_back(world_[j]);
    const auto answers = hb_.probe(label_, peers, grace());
    if (auto v = hb_.verdict(label_, k)) return Error{*v};
    std::vector<int> silent, waiting;  // waiting: in this very call, so told the verdict
    std::string behind;
    for (int r : peers) {
      const auto it = answers.find(r);
      if (it == answers.end()) {
        silent.push_back(r);
      } else if (it->second.reached < k) {
        behind += fmt::format("; rank {} did not reach it either ({})", r, describe(it->second));
      } else if (it->second.in_call && it->second.k == k && it->second.label == label_) {
        waiting.push_back(r);
      }
    }
    std::string message;
    if (!silent.empty()) {
      message = stall_error(silent, kind, k, label_, timeout_).message + behind;
    } else if (!behind.empty()) {
      message = fmt::format("{} #{}{} did not complete within {:g} s{}", call_kind_name(kind), k,
                            where(), timeout_.value, behind);
    } else {
      message = fmt::format(
          "{} #{}{} did not complete within {:g} s although every rank reached it (mismatched "
          "counts or types?)",
          call_kind_name(kind), k, where(), timeout_.value);
    }
    hb_.tell(waiting, label_, k, message);
    return Error{message};
  }

  MPI_Comm comm_;
  Heartbeat& hb_;
  std::string label_;
  std::vector<int> world_;  // rank -> world rank
  Seconds timeout_;
  int rank_ = 0;
  std::uint64_t calls_ = 0, p2p_calls_ = 0;
  std::optional<FaultSpec> fault_;
  std::optional<Error> failed_;
  std::vector<std::byte> zeros_;
  // Sends posted by send_async, in order: request, peer, tag, call number.
  struct Pending {
    MPI_Request req;
    int peer, tag;
    std::uint64_t n;
  };
  std::vector<Pending> pending_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm, Heartbeat& hb,
                                                    std::string label,
                                                    std::vector<int> world_ranks,
                                                    Seconds timeout) {
  return std::make_unique<MpiCommunicator>(comm, hb, std::move(label), std::move(world_ranks),
                                           timeout);
}

}  // namespace planner::runtime::mpi_detail
