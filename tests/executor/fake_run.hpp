#pragma once
// Runs every rank of a plan for the tiny GPT (fixtures.hpp) in the real mode
// on the in-process fake communicator, one thread per rank: each pipeline
// column's programs are derived and their transfers ordered as `planner run`
// does. Shared by real_test.cpp and real_recompute_test.cpp.

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "planner/executor/real.hpp"
#include "planner/runtime/fake_communicator.hpp"

namespace planner::executor::testing {

/// Calls a rank made: blocking sends, posted (async) sends, and the
/// element count of each all-reduce in order.
struct SendCounts {
  int blocking = 0, posted = 0;
  std::vector<std::size_t> all_reduces;
};

/// A rank's communicator that counts its sends and forwards every call.
class CountingComm final : public runtime::Communicator {
 public:
  CountingComm(runtime::Communicator& inner, SendCounts& counts) : in_(inner), n_(counts) {}
  int rank() const override { return in_.rank(); }
  int size() const override { return in_.size(); }
  Seconds timeout() const override { return in_.timeout(); }
  Status all_reduce(void* b, std::size_t c, core::DType d, runtime::ReduceOp op) override {
    n_.all_reduces.push_back(c);
    return in_.all_reduce(b, c, d, op);
  }
  Status all_gather(const void* s, void* r, std::size_t c, core::DType d) override { return in_.all_gather(s, r, c, d); }
  Status reduce_scatter(const void* s, void* r, std::size_t c, core::DType d, runtime::ReduceOp op) override {
    return in_.reduce_scatter(s, r, c, d, op);
  }
  Status all_to_all(const void* s, void* r, std::size_t c, core::DType d) override { return in_.all_to_all(s, r, c, d); }
  Status send(const void* b, std::size_t c, core::DType d, int peer, int tag) override {
    ++n_.blocking;
    return in_.send(b, c, d, peer, tag);
  }
  Status recv(void* b, std::size_t c, core::DType d, int peer, int tag) override { return in_.recv(b, c, d, peer, tag); }
  bool async_sends() const override { return in_.async_sends(); }
  Status send_async(const void* b, std::size_t c, core::DType d, int peer, int tag) override {
    ++n_.posted;
    return in_.send_async(b, c, d, peer, tag);
  }
  Status wait_sends() override { return in_.wait_sends(); }
  Status broadcast(void* b, std::size_t c, core::DType d, int root) override { return in_.broadcast(b, c, d, root); }
  Status barrier() override { return in_.barrier(); }
  Result<std::unique_ptr<runtime::Communicator>> split(int color, int key) override { return in_.split(color, key); }
  void set_fault(std::optional<runtime::FaultSpec> f) override { in_.set_fault(f); }

 private:
  runtime::Communicator& in_;
  SendCounts& n_;
};

/// `counts`, when given, receives each rank's world-communicator calls
/// (a tp group split from it is not counted: 1-D tp plans use the world).
inline std::vector<Result<RealResult>> run_all(const plan::Plan& p, const RealOptions& o,
                                               std::optional<runtime::FaultSpec> drop = std::nullopt,
                                               std::vector<SendCounts>* counts = nullptr) {
  const int n = p.cluster.devices;
  std::vector<RankProgram> progs(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    if (coordinate(p, r, "pp") != 0) continue;
    std::vector<RankProgram> col;
    for (int s = 0; s < p.layout.pp; ++s) {
      auto prog = derive_program(p, tiny_gpt(), with_coordinate(p, r, "pp", s));
      if (!prog) FAIL(prog.error().message);
      col.push_back(*prog);
    }
    REQUIRE(order_transfers(col).ok());
    for (int s = 0; s < p.layout.pp; ++s)
      progs[static_cast<std::size_t>(with_coordinate(p, r, "pp", s))] = col[static_cast<std::size_t>(s)];
  }
  runtime::FakeWorld world(n, Seconds(60));
  if (drop)
    for (int r = 0; r < n; ++r) world.comm(r).set_fault(drop);
  std::vector<Result<RealResult>> out(static_cast<std::size_t>(n), Error{"not run"});
  if (counts) counts->assign(static_cast<std::size_t>(n), SendCounts{});
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      const auto i = static_cast<std::size_t>(r);
      if (counts) {
        CountingComm c(world.comm(r), (*counts)[i]);
        out[i] = run_real(p, progs[i], tiny_gpt(), c, o);
      } else {
        out[i] = run_real(p, progs[i], tiny_gpt(), world.comm(r), o);
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace planner::executor::testing
