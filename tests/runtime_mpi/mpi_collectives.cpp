// Every MPI collective checked element by element on real processes:
//   mpirun -n 2 mpi_collectives   and   mpirun -n 4 --oversubscribe mpi_collectives
// Not Catch2: each rank runs every check, prints its failures and the count
// of checks, and exits 1 on any failure (so mpirun exits non-zero).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "planner/runtime_mpi/mpi_session.hpp"

using namespace planner;
using namespace planner::runtime;

namespace {

struct Checker {
  int rank = 0;
  int checks = 0, failures = 0;

  template <typename T>
  void equal(const char* what, const std::vector<T>& got, const std::vector<T>& want) {
    ++checks;
    if (got == want) return;
    ++failures;
    std::string g, w;
    for (const auto& x : got) g += fmt::format(" {}", x);
    for (const auto& x : want) w += fmt::format(" {}", x);
    std::fprintf(stderr, "rank %d: FAIL %s: got [%s ] want [%s ]\n", rank, what, g.c_str(),
                 w.c_str());
  }
  void ok(const char* what, const Status& s) {
    ++checks;
    if (s.ok()) return;
    ++failures;
    std::fprintf(stderr, "rank %d: FAIL %s: %s\n", rank, what, s.error().message.c_str());
  }
  void error(const char* what, const Status& s, const std::string& want) {
    ++checks;
    if (!s.ok() && s.error().message == want) return;
    ++failures;
    std::fprintf(stderr, "rank %d: FAIL %s: got '%s' want '%s'\n", rank, what,
                 s.ok() ? "success" : s.error().message.c_str(), want.c_str());
  }
};

void collectives(Communicator& c, Checker& ck) {
  const int r = c.rank(), n = c.size();
  const float tri = n * (n - 1) / 2.0f;  // 0 + 1 + ... + (n-1)

  // all_reduce: rank r holds [10r, 10r+1, 10r+2]; element i sums to 10*tri + n*i
  // (n=2: [10, 12, 14]; n=4: [60, 64, 68]).
  std::vector<float> a = {10.0f * r, 10.0f * r + 1, 10.0f * r + 2};
  ck.ok("all_reduce", c.all_reduce(a.data(), 3, core::DType::f32));
  ck.equal("all_reduce sum", a, {10 * tri, 10 * tri + n, 10 * tri + 2 * n});

  // max/min of [r, -r]: [n-1, 0] and [0, -(n-1)].
  std::vector<float> mx = {float(r), -float(r)}, mn = mx;
  ck.ok("all_reduce max", c.all_reduce(mx.data(), 2, core::DType::f32, ReduceOp::max));
  ck.ok("all_reduce min", c.all_reduce(mn.data(), 2, core::DType::f32, ReduceOp::min));
  ck.equal("all_reduce max", mx, {float(n - 1), 0.0f});
  ck.equal("all_reduce min", mn, {0.0f, -float(n - 1)});

  // all_gather of [r, 100+r]: [0, 100, 1, 101, ...].
  std::vector<float> mine = {float(r), 100.0f + r}, gathered(2 * n, -1), want_g;
  for (int j = 0; j < n; ++j) want_g.insert(want_g.end(), {float(j), 100.0f + j});
  ck.ok("all_gather", c.all_gather(mine.data(), gathered.data(), 2, core::DType::f32));
  ck.equal("all_gather", gathered, want_g);

  // reduce_scatter: rank j sends element e = 100 j + e (e < 2n); rank r gets
  // element i = sum_j (100 j + 2r + i) = 100*tri + n(2r + i).
  std::vector<float> rs_send(2 * n), rs_recv(2, -1);
  for (int e = 0; e < 2 * n; ++e) rs_send[e] = 100.0f * r + e;
  ck.ok("reduce_scatter", c.reduce_scatter(rs_send.data(), rs_recv.data(), 2, core::DType::f32));
  ck.equal("reduce_scatter", rs_recv,
           {100 * tri + n * (2.0f * r), 100 * tri + n * (2.0f * r + 1)});

  // all_to_all: rank r sends 10r + j to rank j, so receives 10j + r from j.
  std::vector<float> t_send(n), t_recv(n, -1), want_t(n);
  for (int j = 0; j < n; ++j) {
    t_send[j] = 10.0f * r + j;
    want_t[j] = 10.0f * j + r;
  }
  ck.ok("all_to_all", c.all_to_all(t_send.data(), t_recv.data(), 1, core::DType::f32));
  ck.equal("all_to_all", t_recv, want_t);

  // broadcast of bf16 words from the last rank; f16 all_gather of 0xa000 + r.
  std::vector<std::uint16_t> bc = r == n - 1 ? std::vector<std::uint16_t>{0x3f80, 0xbeef}
                                             : std::vector<std::uint16_t>{0, 0};
  ck.ok("broadcast bf16", c.broadcast(bc.data(), 2, core::DType::bf16, n - 1));
  ck.equal<std::uint16_t>("broadcast bf16", bc, {0x3f80, 0xbeef});
  std::uint16_t h = static_cast<std::uint16_t>(0xa000 + r);
  std::vector<std::uint16_t> hs(n), want_h(n);
  for (int j = 0; j < n; ++j) want_h[j] = static_cast<std::uint16_t>(0xa000 + j);
  ck.ok("all_gather f16", c.all_gather(&h, hs.data(), 1, core::DType::f16));
  ck.equal("all_gather f16", hs, want_h);

  ck.ok("barrier", c.barrier());

  // Ring: send r and 100+r to next with tags 1 and 2; receive tag 2 first.
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  float s1 = float(r), s2 = 100.0f + r, x = -1, y = -1;
  ck.ok("send tag 1", c.send(&s1, 1, core::DType::f32, next, 1));
  ck.ok("send tag 2", c.send(&s2, 1, core::DType::f32, next, 2));
  ck.ok("recv tag 2", c.recv(&y, 1, core::DType::f32, prev, 2));
  ck.ok("recv tag 1", c.recv(&x, 1, core::DType::f32, prev, 1));
  ck.equal<float>("ring", {x, y}, {float(prev), 100.0f + prev});

  // Posted sends do not wait for the receiver: every rank posts 4 MiB (far
  // above the eager limit, so a blocking send would wait for its receive)
  // to `next`, then receives from `prev`: a cycle that deadlocks with
  // blocking sends and completes with send_async.
  ck.equal<int>("async_sends", {c.async_sends() ? 1 : 0}, {1});
  const std::size_t big = std::size_t{1} << 20;  // floats
  std::vector<float> out(big, float(r)), in(big, -1.0f);
  ck.ok("send_async", c.send_async(out.data(), big, core::DType::f32, next, 3));
  ck.ok("recv after send_async", c.recv(in.data(), big, core::DType::f32, prev, 3));
  ck.ok("wait_sends", c.wait_sends());
  ck.equal<float>("send_async ring", {in.front(), in.back()}, {float(prev), float(prev)});

  // Arguments checked before MPI sees them (the call still counts).
  std::uint16_t b = 0;
  ck.error("bf16 reduction", c.all_reduce(&b, 1, core::DType::bf16),
           "all_reduce #10: reduction of bf16 (reductions are f32 only)");
}

void splits(Communicator& c, Checker& ck) {
  const int r = c.rank(), n = c.size();
  if (n == 4) {
    // 2x2 mesh (dp, tp), tp fastest: tp {0,1},{2,3}; dp {0,2},{1,3}.
    auto tp = c.split(r / 2, r);
    auto dp = c.split(r % 2, r);
    if (!tp || !dp) {
      ck.ok("split", !tp ? Status(tp.error()) : Status(dp.error()));
      return;
    }
    ck.equal<int>("tp rank/size", {(*tp)->rank(), (*tp)->size()}, {r % 2, 2});
    ck.equal<int>("dp rank/size", {(*dp)->rank(), (*dp)->size()}, {r / 2, 2});
    float t = float(r), d = float(r);
    ck.ok("tp all_reduce", (*tp)->all_reduce(&t, 1, core::DType::f32));
    ck.ok("dp all_reduce", (*dp)->all_reduce(&d, 1, core::DType::f32));
    // tp: 0+1 = 1, 2+3 = 5; dp: 0+2 = 2, 1+3 = 4.
    ck.equal<float>("tp sum", {t}, {r < 2 ? 1.0f : 5.0f});
    ck.equal<float>("dp sum", {d}, {r % 2 == 0 ? 2.0f : 4.0f});
  }
  // One group in reverse order: rank r becomes n-1-r; all_gather lists n-1..0.
  auto rev = c.split(0, -r);
  if (!rev) {
    ck.ok("split reversed", rev.error());
    return;
  }
  std::vector<float> order(n), want(n);
  for (int j = 0; j < n; ++j) want[j] = float(n - 1 - j);
  float me = float(r);
  ck.equal<int>("reversed rank", {(*rev)->rank()}, {n - 1 - r});
  ck.ok("reversed all_gather", (*rev)->all_gather(&me, order.data(), 1, core::DType::f32));
  ck.equal("reversed all_gather", order, want);
}

void faults(Communicator& world, Checker& ck) {
  // A fresh communicator (numbering from #1) where rank 1 drops #1 and #3.
  const int r = world.rank(), n = world.size();
  const float tri = n * (n - 1) / 2.0f;
  auto made = world.split(0, r);
  if (!made) {
    ck.ok("split for faults", made.error());
    return;
  }
  Communicator& c = **made;
  c.set_fault(FaultSpec{1, 1});
  std::vector<float> a = {10.0f * r, 10.0f * r + 1, 10.0f * r + 2}, b = a;
  ck.ok("dropped all_reduce", c.all_reduce(a.data(), 3, core::DType::f32));  // #1
  ck.ok("whole all_reduce", c.all_reduce(b.data(), 3, core::DType::f32));    // #2
  // #1 lacks rank 1's [10, 11, 12]: n=2 gives [0, 1, 2], n=4 gives [50, 53, 56].
  ck.equal("dropped all_reduce", a, {10 * tri - 10, 10 * tri + n - 11, 10 * tri + 2 * n - 12});
  ck.equal("whole all_reduce", b, {10 * tri, 10 * tri + n, 10 * tri + 2 * n});
  c.set_fault(FaultSpec{1, 3});
  float mine = 1.0f + r;
  std::vector<float> g(n), want(n);
  for (int j = 0; j < n; ++j) want[j] = j == 1 ? 0.0f : 1.0f + j;  // rank 1's block is zeros
  ck.ok("dropped all_gather", c.all_gather(&mine, g.data(), 1, core::DType::f32));  // #3
  ck.equal("dropped all_gather", g, want);
}

}  // namespace

int main(int argc, char** argv) {
  auto session = MpiSession::init(&argc, &argv);
  if (!session) {
    std::fprintf(stderr, "mpi_collectives: error: %s\n", session.error().message.c_str());
    return 2;
  }
  Checker ck;
  ck.rank = (*session)->world_rank();
  {
    auto world = (*session)->world(Seconds(60));
    if (!world) {
      std::fprintf(stderr, "mpi_collectives: error: %s\n", world.error().message.c_str());
      return 2;
    }
    collectives(**world, ck);
    splits(**world, ck);
    faults(**world, ck);
    if (ck.failures > 0) {
      std::fprintf(stderr, "rank %d: %d of %d checks failed\n", ck.rank, ck.failures, ck.checks);
      std::fflush(nullptr);
      (*session)->abort_job(1);
    }
    std::printf("rank %d: %d checks passed\n", ck.rank, ck.checks);
  }
  return 0;
}
