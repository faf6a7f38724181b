#include "planner/runtime/fake_communicator.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace planner::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::byte>;

// One rank's arrival at a collective: its arguments and a copy of its data.
struct Part {
  bool present = false;
  CallKind kind = CallKind::barrier;
  std::size_t count = 0;
  core::DType dtype = core::DType::f32;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  int color = 0, key = 0;
  Bytes data;
};

struct Group;

// One collective, numbered per group. Erased when every rank has left it;
// an abandoned slot (someone timed out) stays until the group dies.
struct Slot {
  std::vector<Part> parts;
  int arrived = 0;
  int departed = 0;
  std::optional<Error> abandoned;                     // the verdict of the first to time out
  std::map<int, std::shared_ptr<Group>> children;     // split: color -> new group
};

struct Message {
  core::DType dtype;
  std::size_t count;
  Bytes data;
};

// State shared by the members of one (sub-)communicator. Shared ownership is
// needed: the members' communicators are owned by different threads.
struct Group {
  Group(std::vector<int> world, std::string label_)
      : world_ranks(std::move(world)), label(std::move(label_)) {}
  const std::vector<int> world_ranks;  // group rank -> world rank
  const std::string label;             // "" for the world, else "split #k color c"
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::uint64_t, Slot> slots;
  std::map<std::tuple<int, int, int>, std::deque<Message>> mail;  // (src, dst, tag)
  int size() const { return static_cast<int>(world_ranks.size()); }
};

Bytes copy_bytes(const void* p, std::size_t n, bool zeros) {
  Bytes b(n);
  if (!zeros && n > 0) std::memcpy(b.data(), p, n);
  return b;
}

bool same_call(const Part& a, const Part& b) {
  return a.kind == b.kind && a.count == b.count && a.dtype == b.dtype && a.op == b.op &&
         a.root == b.root;
}

class FakeCommunicator final : public Communicator {
 public:
  FakeCommunicator(std::shared_ptr<Group> g, int rank, Seconds timeout)
      : g_(std::move(g)), rank_(rank), timeout_(timeout) {}

  int rank() const override { return rank_; }
  int size() const override { return g_->size(); }
  Seconds timeout() const override { return timeout_; }
  void set_fault(std::optional<FaultSpec> f) override { fault_ = f; }

  Status all_reduce(void* buf, std::size_t count, core::DType dtype, ReduceOp op) override {
    const auto k = begin();
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_reduction(CallKind::all_reduce, k, dtype));
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_reduce, k, buf, count, "the"));
    Part p = part(CallKind::all_reduce, count, dtype, buf, count, k);
    p.op = op;
    return collective(std::move(p), k, [&](const Slot& s) {
      reduce_block(s, static_cast<float*>(buf), 0, count, op);
    });
  }

  Status all_gather(const void* send, void* recv, std::size_t cpr, core::DType dtype) override {
    const auto k = begin();
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_gather, k, send, cpr, "send"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_gather, k, recv, cpr, "recv"));
    const std::size_t block = cpr * dtype_size(dtype);
    return collective(part(CallKind::all_gather, cpr, dtype, send, cpr, k), k,
                      [&](const Slot& s) {
                        for (int j = 0; j < size(); ++j)
                          copy_out(recv, j * block, s.parts[j].data, 0, block);
                      });
  }

  Status reduce_scatter(const void* send, void* recv, std::size_t cpr, core::DType dtype,
                        ReduceOp op) override {
    const auto k = begin();
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_reduction(CallKind::reduce_scatter, k, dtype));
    PLANNER_TRY_STATUS(check_buffer(CallKind::reduce_scatter, k, send, cpr, "send"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::reduce_scatter, k, recv, cpr, "recv"));
    Part p = part(CallKind::reduce_scatter, cpr, dtype, send, cpr * size(), k);
    p.op = op;
    return collective(std::move(p), k, [&](const Slot& s) {
      reduce_block(s, static_cast<float*>(recv), cpr * rank_, cpr, op);
    });
  }

  Status all_to_all(const void* send, void* recv, std::size_t cpr, core::DType dtype) override {
    const auto k = begin();
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_to_all, k, send, cpr, "send"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::all_to_all, k, recv, cpr, "recv"));
    const std::size_t block = cpr * dtype_size(dtype);
    return collective(part(CallKind::all_to_all, cpr, dtype, send, cpr * size(), k), k,
                      [&](const Slot& s) {
                        for (int j = 0; j < size(); ++j)
                          copy_out(recv, j * block, s.parts[j].data, rank_ * block, block);
                      });
  }

  Status broadcast(void* buf, std::size_t count, core::DType dtype, int root) override {
    const auto k = begin();
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_peer(CallKind::broadcast, k, root, size(), "root"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::broadcast, k, buf, count, "the"));
    Part p = part(CallKind::broadcast, count, dtype, buf, rank_ == root ? count : 0, k);
    p.root = root;
    return collective(std::move(p), k, [&](const Slot& s) {
      if (rank_ != root) copy_out(buf, 0, s.parts[root].data, 0, count * dtype_size(dtype));
    });
  }

  Status barrier() override {
    const auto k = begin();
    PLANNER_TRY_STATUS(check_failed());
    return collective(part(CallKind::barrier, 0, core::DType::f32, nullptr, 0, k), k,
                      [](const Slot&) {});
  }

  Result<std::unique_ptr<Communicator>> split(int color, int key) override {
    const auto k = begin();
    PLANNER_TRY_STATUS(check_failed());
    if (color < 0) return make_error("split #{}: color {} is negative", k, color);
    Part p = part(CallKind::split, 0, core::DType::f32, nullptr, 0, k);
    p.color = color;
    p.key = key;
    std::unique_ptr<Communicator> child;
    // Runs under the group's lock, so the first member to get here creates
    // the child group and the others find it.
    PLANNER_TRY_STATUS(collective(std::move(p), k, [&](Slot& s) {
      std::vector<std::pair<int, int>> members;  // (key, parent rank)
      for (int j = 0; j < size(); ++j)
        if (s.parts[j].color == color) members.emplace_back(s.parts[j].key, j);
      std::sort(members.begin(), members.end());
      auto& group = s.children[color];
      if (!group) {
        std::vector<int> world;
        for (const auto& m : members) world.push_back(g_->world_ranks[m.second]);
        std::string label = fmt::format("split #{} color {}", k, color);
        if (!g_->label.empty()) label = g_->label + "/" + label;
        group = std::make_shared<Group>(std::move(world), std::move(label));
      }
      const auto it = std::find(members.begin(), members.end(), std::pair{key, rank_});
      child = std::make_unique<FakeCommunicator>(group, static_cast<int>(it - members.begin()),
                                                 timeout_);
    }));
    return child;
  }

  Status send(const void* buf, std::size_t count, core::DType dtype, int peer, int tag) override {
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_peer(CallKind::send, p2p_no_ + 1, peer, size(), "peer"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::send, p2p_no_ + 1, buf, count, "send"));
    ++p2p_no_;
    std::lock_guard lock(g_->mu);
    g_->mail[{rank_, peer, tag}].push_back(
        Message{dtype, count, copy_bytes(buf, count * dtype_size(dtype), false)});
    g_->cv.notify_all();
    return {};
  }

  // Sends are buffered in the mailbox: they never wait for the receiver.
  bool async_sends() const override { return true; }

  Status recv(void* buf, std::size_t count, core::DType dtype, int peer, int tag) override {
    PLANNER_TRY_STATUS(check_failed());
    PLANNER_TRY_STATUS(check_peer(CallKind::recv, p2p_no_ + 1, peer, size(), "peer"));
    PLANNER_TRY_STATUS(check_buffer(CallKind::recv, p2p_no_ + 1, buf, count, "recv"));
    ++p2p_no_;
    std::unique_lock lock(g_->mu);
    auto& q = g_->mail[{peer, rank_, tag}];
    if (!g_->cv.wait_until(lock, deadline(), [&] { return !q.empty(); }))
      return fail(Error{fmt::format(
          "recv from rank {} (tag {}){}: rank {} did not send within {:g} s (stalled or dead)",
          g_->world_ranks[peer], tag, where(), g_->world_ranks[peer], timeout_.value)});
    Message m = std::move(q.front());
    q.pop_front();
    if (m.dtype != dtype || m.count != count)
      return make_error("recv from rank {} (tag {}): expected {} x {}, rank {} sent {} x {}",
                        g_->world_ranks[peer], tag, count, dtype_name(dtype),
                        g_->world_ranks[peer], m.count, dtype_name(m.dtype));
    copy_out(buf, 0, m.data, 0, m.data.size());
    return {};
  }

 private:
  std::uint64_t begin() { return ++calls_; }
  Clock::time_point deadline() const {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(timeout_.value));
  }
  std::string where() const { return g_->label.empty() ? "" : " on " + g_->label; }

  Status check_failed() const {
    if (failed_) return Error{"communicator failed earlier: " + failed_->message};
    return {};
  }
  Status fail(Error e) {
    failed_ = e;
    return e;
  }

  // My arrival at collective k: `elems` elements of buf, or zeros when the
  // fault drops this rank's contribution to it.
  Part part(CallKind kind, std::size_t count, core::DType dtype, const void* buf, std::size_t elems,
            std::uint64_t k) const {
    Part p;
    p.present = true;
    p.kind = kind;
    p.count = count;
    p.dtype = dtype;
    const bool drop = fault_ && fault_->rank == rank_ && fault_->nth == k;
    p.data = copy_bytes(buf, elems * dtype_size(dtype), drop);
    return p;
  }

  static void copy_out(void* dst, std::size_t dst_off, const Bytes& src, std::size_t src_off,
                       std::size_t n) {
    if (n > 0) std::memcpy(static_cast<std::byte*>(dst) + dst_off, src.data() + src_off, n);
  }

  // out[i] = op over ranks (in order 0..n-1) of element first+i of each part.
  void reduce_block(const Slot& s, float* out, std::size_t first, std::size_t n,
                    ReduceOp op) const {
    if (n == 0) return;
    std::vector<float> acc(n), tmp(n);
    std::memcpy(acc.data(), s.parts[0].data.data() + first * 4, n * 4);
    for (int j = 1; j < size(); ++j) {
      std::memcpy(tmp.data(), s.parts[j].data.data() + first * 4, n * 4);
      reduce_f32_into(acc.data(), tmp.data(), n, op);
    }
    std::memcpy(out, acc.data(), n * 4);
  }

  // Deposits my part of collective k, waits (until the deadline) for every
  // rank's, checks they called the same thing, then runs `finish` under the
  // group's lock to write my result.
  template <typename Finish>
  Status collective(Part mine, std::uint64_t k, Finish&& finish) {
    const auto until = deadline();
    const CallKind kind = mine.kind;
    std::unique_lock lock(g_->mu);
    Slot& s = g_->slots[k];
    if (s.parts.empty()) s.parts.resize(static_cast<std::size_t>(size()));
    if (s.abandoned) return fail(*s.abandoned);
    s.parts[rank_] = std::move(mine);
    if (++s.arrived == size()) g_->cv.notify_all();
    const bool all = g_->cv.wait_until(lock, until, [&] {
      return s.arrived == size() || s.abandoned.has_value();
    });
    if (s.abandoned) return fail(*s.abandoned);
    if (!all) {
      std::vector<int> missing;
      for (int j = 0; j < size(); ++j)
        if (!s.parts[j].present) missing.push_back(g_->world_ranks[j]);
      s.abandoned = stall_error(missing, kind, k, g_->label, timeout_);
      g_->cv.notify_all();
      return fail(*s.abandoned);
    }
    Status st;
    for (int j = 0; j < size() && st.ok(); ++j)
      if (!same_call(s.parts[j], s.parts[0]))
        st = make_error("{} #{}{}: rank {} called {} ({} x {}, root {}), rank {} called {} ({} x "
                        "{}, root {})",
                        call_kind_name(kind), k, where(), g_->world_ranks[0],
                        call_kind_name(s.parts[0].kind), s.parts[0].count,
                        dtype_name(s.parts[0].dtype), s.parts[0].root, g_->world_ranks[j],
                        call_kind_name(s.parts[j].kind), s.parts[j].count,
                        dtype_name(s.parts[j].dtype), s.parts[j].root);
    if (st.ok()) finish(s);
    if (++s.departed == size()) g_->slots.erase(k);
    return st.ok() ? st : fail(st.error());
  }

  std::shared_ptr<Group> g_;
  int rank_;
  Seconds timeout_;
  std::uint64_t calls_ = 0;   // collectives called so far
  std::uint64_t p2p_no_ = 0;  // send/recv called so far
  std::optional<FaultSpec> fault_;
  std::optional<Error> failed_;
};

}  // namespace

FakeWorld::FakeWorld(int n, Seconds timeout) {
  std::vector<int> world(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) world[r] = r;
  auto g = std::make_shared<Group>(std::move(world), "");
  for (int r = 0; r < n; ++r) comms_.push_back(std::make_unique<FakeCommunicator>(g, r, timeout));
}

FakeWorld::~FakeWorld() = default;

}  // namespace planner::runtime
