// The in-process fake communicator: every collective on 2, 3 and 4 threads,
// checked element by element against sums worked out by hand. Threads only
// record results; Catch2 assertions run on the main thread after join
// (Catch2 is not thread-safe).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "planner/runtime/fake_communicator.hpp"

using namespace planner;
using namespace planner::runtime;

namespace {

// Runs body(comm, rank) on one thread per rank of `world`; `skip` ranks never run.
void run_ranks(FakeWorld& world, const std::function<void(Communicator&, int)>& body,
               const std::vector<int>& skip = {}) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world.size(); ++r) {
    if (std::find(skip.begin(), skip.end(), r) != skip.end()) continue;
    threads.emplace_back([&, r] { body(world.comm(r), r); });
  }
  for (auto& t : threads) t.join();
}

// Per-rank outputs and error messages ("" when ok).
struct Outcome {
  explicit Outcome(int n) : out(n), err(n) {}
  std::vector<std::vector<float>> out;
  std::vector<std::string> err;
  void note(int r, const Status& s) {
    if (!s.ok() && err[r].empty()) err[r] = s.error().message;
  }
};

}  // namespace

TEST_CASE("all_reduce sums rank-valued buffers on 2 3 and 4 threads", "[runtime]") {
  for (int n : {2, 3, 4}) {
    FakeWorld world(n);
    Outcome o(n);
    run_ranks(world, [&](Communicator& c, int r) {
      if (c.rank() != r || c.size() != n) o.err[r] = "wrong rank or size";
      std::vector<float> buf = {10.0f * r, 10.0f * r + 1, 10.0f * r + 2};
      o.note(r, c.all_reduce(buf.data(), buf.size(), core::DType::f32));
      o.out[r] = buf;
    });
    // element i = sum_r (10 r + i) = 10 * n(n-1)/2 + n i
    //   n=2: [10, 12, 14]; n=3: [30, 33, 36]; n=4: [60, 64, 68]
    const float base = 10.0f * n * (n - 1) / 2;
    for (int r = 0; r < n; ++r) {
      INFO("n=" << n << " rank " << r);
      REQUIRE(o.err[r].empty());
      REQUIRE(o.out[r] == std::vector<float>{base, base + n, base + 2 * n});
    }
  }
}

TEST_CASE("all_reduce max and min take the extreme rank", "[runtime]") {
  FakeWorld world(4);
  Outcome mx(4), mn(4);
  run_ranks(world, [&](Communicator& c, int r) {
    // rank r holds [r, -r]: max = [3, 0], min = [0, -3]
    std::vector<float> a = {float(r), -float(r)}, b = a;
    mx.note(r, c.all_reduce(a.data(), 2, core::DType::f32, ReduceOp::max));
    mn.note(r, c.all_reduce(b.data(), 2, core::DType::f32, ReduceOp::min));
    mx.out[r] = a;
    mn.out[r] = b;
  });
  for (int r = 0; r < 4; ++r) {
    REQUIRE(mx.err[r].empty());
    REQUIRE(mn.err[r].empty());
    REQUIRE(mx.out[r] == std::vector<float>{3, 0});
    REQUIRE(mn.out[r] == std::vector<float>{0, -3});
  }
}

TEST_CASE("all_gather concatenates blocks in rank order", "[runtime]") {
  FakeWorld world(3);
  Outcome o(3);
  run_ranks(world, [&](Communicator& c, int r) {
    std::vector<float> send = {float(r), 100.0f + r}, recv(6, -1.0f);
    o.note(r, c.all_gather(send.data(), recv.data(), 2, core::DType::f32));
    o.out[r] = recv;
  });
  for (int r = 0; r < 3; ++r) {
    REQUIRE(o.err[r].empty());
    REQUIRE(o.out[r] == std::vector<float>{0, 100, 1, 101, 2, 102});
  }
}

TEST_CASE("reduce_scatter gives each rank the sum of its block", "[runtime]") {
  FakeWorld world(4);
  Outcome o(4);
  run_ranks(world, [&](Communicator& c, int r) {
    // rank j sends element e = 8 j + e (e = 0..7, two per rank)
    std::vector<float> send(8), recv(2, -1.0f);
    for (int e = 0; e < 8; ++e) send[e] = 8.0f * r + e;
    o.note(r, c.reduce_scatter(send.data(), recv.data(), 2, core::DType::f32));
    o.out[r] = recv;
  });
  // rank r, element i: sum_j (8 j + 2 r + i) = 8 * 6 + 4 (2 r + i) = 48 + 8 r + 4 i
  for (int r = 0; r < 4; ++r) {
    REQUIRE(o.err[r].empty());
    REQUIRE(o.out[r] == std::vector<float>{48.0f + 8 * r, 52.0f + 8 * r});
  }
}

TEST_CASE("all_to_all transposes blocks", "[runtime]") {
  FakeWorld world(3);
  Outcome o(3);
  run_ranks(world, [&](Communicator& c, int r) {
    // rank r sends 10 r + j to rank j, so rank r receives 10 j + r from rank j
    std::vector<float> send = {10.0f * r, 10.0f * r + 1, 10.0f * r + 2}, recv(3, -1.0f);
    o.note(r, c.all_to_all(send.data(), recv.data(), 1, core::DType::f32));
    o.out[r] = recv;
  });
  for (int r = 0; r < 3; ++r) {
    REQUIRE(o.err[r].empty());
    REQUIRE(o.out[r] == std::vector<float>{float(r), 10.0f + r, 20.0f + r});
  }
}

TEST_CASE("broadcast and all_gather move bf16 as opaque 2-byte words", "[runtime]") {
  FakeWorld world(4);
  std::vector<std::vector<std::uint16_t>> bc(4), ag(4);
  std::vector<std::string> err(4);
  run_ranks(world, [&](Communicator& c, int r) {
    // 0x3f80 is bf16 1.0; root 2 holds {0x3f80, 0xbeef}, the others garbage
    std::vector<std::uint16_t> buf = r == 2 ? std::vector<std::uint16_t>{0x3f80, 0xbeef}
                                            : std::vector<std::uint16_t>{0x1111, 0x2222};
    Status s = c.broadcast(buf.data(), 2, core::DType::bf16, 2);
    std::uint16_t mine = static_cast<std::uint16_t>(0xa000 + r);
    std::vector<std::uint16_t> all(4, 0);
    Status t = c.all_gather(&mine, all.data(), 1, core::DType::f16);
    if (!s.ok()) err[r] = s.error().message;
    if (!t.ok()) err[r] = t.error().message;
    bc[r] = buf;
    ag[r] = all;
  });
  for (int r = 0; r < 4; ++r) {
    REQUIRE(err[r].empty());
    REQUIRE(bc[r] == std::vector<std::uint16_t>{0x3f80, 0xbeef});
    REQUIRE(ag[r] == std::vector<std::uint16_t>{0xa000, 0xa001, 0xa002, 0xa003});
  }
}

TEST_CASE("barrier waits for every rank", "[runtime]") {
  FakeWorld world(4);
  std::atomic<int> before{0};
  std::vector<int> seen(4, -1);
  run_ranks(world, [&](Communicator& c, int r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * r));
    before.fetch_add(1);
    Status s = c.barrier();
    seen[r] = s.ok() ? before.load() : -2;
  });
  // Every rank incremented before entering, so each sees all 4 after leaving.
  REQUIRE(seen == std::vector<int>{4, 4, 4, 4});
}

TEST_CASE("send and recv around a ring match by source and tag", "[runtime]") {
  FakeWorld world(3);
  Outcome o(3);
  run_ranks(world, [&](Communicator& c, int r) {
    const int next = (r + 1) % 3, prev = (r + 2) % 3;
    float a = float(r), b = 100.0f + r;
    o.note(r, c.send(&a, 1, core::DType::f32, next, 1));
    o.note(r, c.send(&b, 1, core::DType::f32, next, 2));
    float x = -1, y = -1;
    o.note(r, c.recv(&y, 1, core::DType::f32, prev, 2));  // tag 2 first: matched by tag
    o.note(r, c.recv(&x, 1, core::DType::f32, prev, 1));
    o.out[r] = {x, y};
  });
  // rank r receives from prev = (r + 2) % 3: {prev, 100 + prev}
  REQUIRE(o.out[0] == std::vector<float>{2, 102});
  REQUIRE(o.out[1] == std::vector<float>{0, 100});
  REQUIRE(o.out[2] == std::vector<float>{1, 101});
  for (int r = 0; r < 3; ++r) REQUIRE(o.err[r].empty());
}

TEST_CASE("split makes the tp and dp groups of a 2x2 mesh", "[runtime]") {
  FakeWorld world(4);
  std::vector<std::vector<int>> shape(4);  // {tp rank, tp size, dp rank, dp size}
  Outcome tp(4), dp(4), rev(4);
  run_ranks(world, [&](Communicator& c, int r) {
    // mesh (dp, tp) = (2, 2), tp fastest: tp groups {0,1},{2,3}; dp groups {0,2},{1,3}
    auto t = c.split(r / 2, r);
    auto d = c.split(r % 2, r);
    auto v = c.split(0, -r);  // one group, ranks in reverse order
    if (!t || !d || !v) {
      tp.err[r] = "split failed";
      return;
    }
    shape[r] = {(*t)->rank(), (*t)->size(), (*d)->rank(), (*d)->size(), (*v)->rank()};
    float a = float(r), b = float(r);
    tp.note(r, (*t)->all_reduce(&a, 1, core::DType::f32));
    dp.note(r, (*d)->all_reduce(&b, 1, core::DType::f32));
    std::vector<float> order(4);
    float mine = float(r);
    rev.note(r, (*v)->all_gather(&mine, order.data(), 1, core::DType::f32));
    tp.out[r] = {a};
    dp.out[r] = {b};
    rev.out[r] = order;
  });
  // tp sums: 0+1 = 1 and 2+3 = 5; dp sums: 0+2 = 2 and 1+3 = 4.
  const std::vector<float> tp_sum = {1, 1, 5, 5}, dp_sum = {2, 4, 2, 4};
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    REQUIRE(tp.err[r].empty());
    REQUIRE(dp.err[r].empty());
    REQUIRE(rev.err[r].empty());
    REQUIRE(shape[r] == std::vector<int>{r % 2, 2, r / 2, 2, 3 - r});
    REQUIRE(tp.out[r][0] == tp_sum[r]);
    REQUIRE(dp.out[r][0] == dp_sum[r]);
    REQUIRE(rev.out[r] == std::vector<float>{3, 2, 1, 0});
  }
}

TEST_CASE("a dropped contribution changes the sum by exactly that rank's values", "[runtime]") {
  FakeWorld world(4);
  Outcome first(4), second(4), rs(4);
  run_ranks(world, [&](Communicator& c, int r) {
    c.set_fault(FaultSpec{2, 1});  // rank 2 drops its contribution to collective #1
    std::vector<float> a = {10.0f * r, 10.0f * r + 1, 10.0f * r + 2}, b = a;
    first.note(r, c.all_reduce(a.data(), 3, core::DType::f32));  // #1
    second.note(r, c.all_reduce(b.data(), 3, core::DType::f32));  // #2
    c.set_fault(FaultSpec{1, 3});
    std::vector<float> send(4), recv(1);
    for (int e = 0; e < 4; ++e) send[e] = 1.0f + r;  // rank j contributes j+1 everywhere
    rs.note(r, c.reduce_scatter(send.data(), recv.data(), 1, core::DType::f32));  // #3
    first.out[r] = a;
    second.out[r] = b;
    rs.out[r] = recv;
  });
  // full sums [60, 64, 68] (see the first test); rank 2 held [20, 21, 22]:
  // #1 = [40, 43, 46]; #2 is whole again. reduce_scatter: 1+2+3+4 = 10, minus rank 1's 2 = 8.
  for (int r = 0; r < 4; ++r) {
    REQUIRE(first.err[r].empty());
    REQUIRE(first.out[r] == std::vector<float>{40, 43, 46});
    REQUIRE(second.out[r] == std::vector<float>{60, 64, 68});
    REQUIRE(rs.out[r] == std::vector<float>{8});
  }
}

TEST_CASE("a rank that never arrives is named within the timeout", "[runtime]") {
  FakeWorld world(4, Seconds(0.3));
  std::vector<std::string> err(4);
  std::vector<double> took(4, 0.0);
  run_ranks(
      world,
      [&](Communicator& c, int r) {
        const auto t0 = std::chrono::steady_clock::now();
        float x = 1;
        Status s = c.all_reduce(&x, 1, core::DType::f32);
        took[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!s.ok()) err[r] = s.error().message;
        // The communicator stays failed.
        Status again = c.barrier();
        if (again.ok()) err[r] += " | barrier succeeded";
      },
      /*skip=*/{2});
  for (int r : {0, 1, 3}) {
    INFO("rank " << r);
    REQUIRE(err[r] == "rank 2 did not reach all_reduce #1 within 0.3 s (stalled or dead)");
    REQUIRE(took[r] < 0.3 + 2.0);
  }
}

TEST_CASE("a stall in a sub-communicator names the world rank and the group", "[runtime]") {
  FakeWorld world(4, Seconds(0.2));
  std::vector<std::string> err(4);
  run_ranks(world, [&](Communicator& c, int r) {
    auto dp = c.split(r % 2, r);  // {0,2} and {1,3}
    if (!dp) return;
    if (r == 3) return;  // world rank 3 (dp rank 1 of group {1,3}) stalls
    float x = 1;
    Status s = (*dp)->all_reduce(&x, 1, core::DType::f32);
    if (!s.ok()) err[r] = s.error().message;
  });
  REQUIRE(err[0].empty());
  REQUIRE(err[2].empty());
  REQUIRE(err[1] ==
          "rank 3 did not reach all_reduce #1 on split #1 color 1 within 0.2 s (stalled or dead)");
}

TEST_CASE("recv names a peer that never sends", "[runtime]") {
  FakeWorld world(2, Seconds(0.1));
  std::string err;
  run_ranks(world, [&](Communicator& c, int r) {
    if (r != 0) return;
    float x = 0;
    Status s = c.recv(&x, 1, core::DType::f32, 1, 7);
    if (!s.ok()) err = s.error().message;
  });
  REQUIRE(err == "recv from rank 1 (tag 7): rank 1 did not send within 0.1 s (stalled or dead)");
}

TEST_CASE("mismatched calls and bad arguments are errors", "[runtime]") {
  FakeWorld world(2, Seconds(5));
  std::vector<std::string> err(2), bad(2);
  run_ranks(world, [&](Communicator& c, int r) {
    std::vector<float> buf(4, 1.0f);
    Status s = c.all_reduce(buf.data(), r == 0 ? 3 : 4, core::DType::f32);
    if (!s.ok()) err[r] = s.error().message;
  });
  REQUIRE(err[0] == "all_reduce #1: rank 0 called all_reduce (3 x f32, root 0), rank 1 called "
                    "all_reduce (4 x f32, root 0)");
  REQUIRE(err[1] == err[0]);

  FakeWorld w2(2, Seconds(5));
  std::uint16_t h = 0;
  Status s = w2.comm(0).all_reduce(&h, 1, core::DType::bf16);
  REQUIRE_FALSE(s.ok());
  REQUIRE(s.error().message == "all_reduce #1: reduction of bf16 (reductions are f32 only)");
  Status t = w2.comm(0).broadcast(&h, 1, core::DType::bf16, 5);
  REQUIRE(t.error().message == "broadcast #2: root 5 is not a rank of this communicator (size 2)");
}

TEST_CASE("parse_fault_spec reads drop:RANK:N", "[runtime]") {
  auto f = parse_fault_spec("drop:2:17");
  REQUIRE(f.ok());
  REQUIRE(*f == FaultSpec{2, 17});
  REQUIRE(parse_fault_spec("drop:2").error().message == "--fault 'drop:2': expected drop:RANK:N");
  REQUIRE(parse_fault_spec("kill:1:1").error().message ==
          "--fault 'kill:1:1': unknown fault kind 'kill' (only 'drop')");
  REQUIRE(parse_fault_spec("drop:-1:1").error().message ==
          "--fault 'drop:-1:1': RANK is not a non-negative integer");
  REQUIRE(parse_fault_spec("drop:1:0").error().message ==
          "--fault 'drop:1:0': N is not a positive integer (collectives count from 1)");
  REQUIRE_FALSE(parse_fault_spec("drop:1:2:3").ok());
}
