#pragma once
// Runs every rank of a plan for the tiny GPT (fixtures.hpp) in the real mode
// on the in-process fake communicator, one thread per rank: each pipeline
// column's programs are derived and their transfers ordered as `planner run`
// does. Shared by real_test.cpp and real_recompute_test.cpp.

#include <optional>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "planner/executor/real.hpp"
#include "planner/runtime/fake_communicator.hpp"

namespace planner::executor::testing {

inline std::vector<Result<RealResult>> run_all(const plan::Plan& p, const RealOptions& o,
                                               std::optional<runtime::FaultSpec> drop = std::nullopt) {
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
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      out[static_cast<std::size_t>(r)] = run_real(p, progs[static_cast<std::size_t>(r)], tiny_gpt(), world.comm(r), o);
    });
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace planner::executor::testing
