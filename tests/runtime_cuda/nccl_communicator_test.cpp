// The NCCL communicator on real GPUs: one thread per device, the NCCL id
// exchanged over the in-process fake. Tagged [gpu]; without a GPU each test
// returns at once after a warning (and ctest excludes [gpu] where none is
// present, see tests/CMakeLists.txt).
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include "planner/runtime/fake_communicator.hpp"
#include "planner/runtime_cuda/nccl_communicator.hpp"

using namespace planner;
using namespace planner::runtime;

namespace {

// Copies host values to a new device buffer; nullptr on failure.
float* to_device(const std::vector<float>& v) {
  float* d = nullptr;
  if (cudaMalloc(&d, std::max<std::size_t>(1, v.size()) * sizeof(float)) != cudaSuccess)
    return nullptr;
  cudaMemcpy(d, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice);
  return d;
}
std::vector<float> to_host(const float* d, std::size_t n) {
  std::vector<float> v(n);
  cudaMemcpy(v.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
  return v;
}

}  // namespace

TEST_CASE("NCCL collectives on every visible GPU", "[gpu][runtime_cuda]") {
  const int n = std::min(cuda_device_count(), 4);
  if (n == 0) {
    WARN("no GPU: skipped");
    return;
  }
  FakeWorld host(n, Seconds(60));
  std::vector<std::vector<float>> ar(n), ag(n), rs(n), a2a(n), dropped(n);
  std::vector<std::string> err(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      auto made = make_nccl_communicator(host.comm(r), r, Seconds(60));
      if (!made) {
        err[r] = made.error().message;
        return;
      }
      Communicator& c = **made;
      auto note = [&](const Status& s) {
        if (!s.ok() && err[r].empty()) err[r] = s.error().message;
      };
      float* a = to_device({10.0f * r, 10.0f * r + 1, 10.0f * r + 2});
      note(c.all_reduce(a, 3, core::DType::f32));  // #1
      ar[r] = to_host(a, 3);
      float* mine = to_device({float(r), 100.0f + r});
      float* all = to_device(std::vector<float>(2 * n, -1));
      note(c.all_gather(mine, all, 2, core::DType::f32));  // #2
      ag[r] = to_host(all, 2 * n);
      std::vector<float> send(2 * n);
      for (int e = 0; e < 2 * n; ++e) send[e] = 100.0f * r + e;
      float* s = to_device(send);
      float* out = to_device({-1, -1});
      note(c.reduce_scatter(s, out, 2, core::DType::f32));  // #3
      rs[r] = to_host(out, 2);
      std::vector<float> t(n);
      for (int j = 0; j < n; ++j) t[j] = 10.0f * r + j;
      float* ts = to_device(t);
      float* tr = to_device(std::vector<float>(n, -1));
      note(c.all_to_all(ts, tr, 1, core::DType::f32));  // #4
      a2a[r] = to_host(tr, n);
      c.set_fault(FaultSpec{0, 6});
      note(c.barrier());  // #5
      float* d = to_device({1.0f + r});
      note(c.all_reduce(d, 1, core::DType::f32));  // #6: rank 0 drops its 1
      dropped[r] = to_host(d, 1);
      for (float* p : {a, mine, all, s, out, ts, tr, d}) cudaFree(p);
    });
  for (auto& t : threads) t.join();
  const float tri = n * (n - 1) / 2.0f;
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r << " of " << n);
    REQUIRE(err[r].empty());
    // Same hand sums as tests/runtime_mpi/mpi_collectives.cpp.
    REQUIRE(ar[r] == std::vector<float>{10 * tri, 10 * tri + n, 10 * tri + 2 * n});
    std::vector<float> want_g, want_t(n);
    for (int j = 0; j < n; ++j) {
      want_g.insert(want_g.end(), {float(j), 100.0f + j});
      want_t[j] = 10.0f * j + r;
    }
    REQUIRE(ag[r] == want_g);
    REQUIRE(rs[r] == std::vector<float>{100 * tri + n * (2.0f * r), 100 * tri + n * (2.0f * r + 1)});
    REQUIRE(a2a[r] == want_t);
    // sum_j (1 + j) = n + tri, minus rank 0's 1.
    REQUIRE(dropped[r] == std::vector<float>{n + tri - 1});
  }
}
