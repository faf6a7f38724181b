// The CUDA device on a real GPU: cuBLAS GEMMs in each precision against
// products worked out by hand, the traffic and optimizer kernels, the event
// timer. Tagged [gpu]: ctest registers them only where a GPU was found at
// configure time (tests/CMakeLists.txt); run by hand without one, each test
// returns at once after a warning.
#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "planner/runtime_cuda/cuda_device.hpp"
#include "planner/runtime_cuda/nccl_communicator.hpp"

using namespace planner;
using namespace planner::runtime;

namespace {

// Small integers are exact in every precision, so the products are too.
std::vector<std::uint8_t> encode(const std::vector<float>& v, core::Precision p) {
  std::vector<std::uint8_t> out(v.size() * core::precision_bytes(p));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (p == core::Precision::bf16) {
      std::uint32_t bits;
      std::memcpy(&bits, &v[i], 4);
      const auto top = static_cast<std::uint16_t>(bits >> 16);  // exact for small integers
      std::memcpy(out.data() + 2 * i, &top, 2);
    } else if (p == core::Precision::fp16) {
      const __half h = __float2half(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(out.data() + 4 * i, &v[i], 4);
    }
  }
  return out;
}

std::vector<float> decode(const std::vector<std::uint8_t>& raw, core::Precision p) {
  const std::size_t n = raw.size() / core::precision_bytes(p);
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (p == core::Precision::bf16) {
      std::uint16_t top;
      std::memcpy(&top, raw.data() + 2 * i, 2);
      const std::uint32_t bits = static_cast<std::uint32_t>(top) << 16;
      std::memcpy(&out[i], &bits, 4);
    } else if (p == core::Precision::fp16) {
      __half h;
      std::memcpy(&h, raw.data() + 2 * i, 2);
      out[i] = __half2float(h);
    } else {
      std::memcpy(&out[i], raw.data() + 4 * i, 4);
    }
  }
  return out;
}

bool no_gpu() {
  if (cuda_device_count() > 0) return false;
  WARN("no GPU: skipped");
  return true;
}

}  // namespace

TEST_CASE("cuBLAS GEMMs in every precision, row-major and batched", "[gpu][runtime_cuda]") {
  if (no_gpu()) return;
  auto made = make_cuda_device(0);
  REQUIRE(made);
  Device& d = **made;
  // Two row-major products C[2x3] = A[2x2] B[2x3]:
  //   batch 0: A = [1 2; 3 4], B = [1 0 2; 0 1 3]
  //     C = [1*1+2*0, 1*0+2*1, 1*2+2*3; 3*1+4*0, 3*0+4*1, 3*2+4*3] = [1 2 8; 3 4 18]
  //   batch 1: A = [2 0; 0 2] (twice the identity), B = [5 6 7; 8 9 10] -> C = 2B
  const std::vector<float> a{1, 2, 3, 4, 2, 0, 0, 2};
  const std::vector<float> b{1, 0, 2, 0, 1, 3, 5, 6, 7, 8, 9, 10};
  const std::vector<float> want{1, 2, 8, 3, 4, 18, 10, 12, 14, 16, 18, 20};
  for (core::Precision p : {core::Precision::fp32, core::Precision::tf32, core::Precision::bf16, core::Precision::fp16}) {
    INFO(core::precision_name(p));
    const auto ea = encode(a, p), eb = encode(b, p);
    auto da = d.allocate(ea.size()), db = d.allocate(eb.size()), dc = d.allocate(want.size() * core::precision_bytes(p));
    REQUIRE((da && db && dc));
    REQUIRE(d.synchronize());
    REQUIRE(cudaMemcpy(*da, ea.data(), ea.size(), cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(*db, eb.data(), eb.size(), cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(d.gemm(p, 2, 2, 3, 2, *da, *db, *dc));
    REQUIRE(d.synchronize());
    std::vector<std::uint8_t> raw(want.size() * core::precision_bytes(p));
    REQUIRE(cudaMemcpy(raw.data(), *dc, raw.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(decode(raw, p) == want);
    for (void* x : {*da, *db, *dc}) d.release(x);
  }
  CHECK_FALSE(d.gemm(core::Precision::fp32, 1, 0, 3, 2, nullptr, nullptr, nullptr));
}

TEST_CASE("traffic writes the destination, fill, optimizer updates by hand", "[gpu][runtime_cuda]") {
  if (no_gpu()) return;
  auto made = make_cuda_device(0);
  REQUIRE(made);
  Device& d = **made;
  // 64 f32 = 256 bytes = 16 words of 16 bytes; capacity 128 bytes (8 words):
  // write_bytes 128 writes the first 8 words (32 floats) only.
  auto src = d.allocate(256), dst = d.allocate(256);
  REQUIRE((src && dst));
  REQUIRE(d.fill(*src, 64, core::Precision::fp32, 2.0f));
  REQUIRE(d.traffic(*src, *dst, 128, 1000, 128));
  REQUIRE(d.synchronize());
  std::vector<float> out(64);
  REQUIRE(cudaMemcpy(out.data(), *dst, 256, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int i = 0; i < 64; ++i) CHECK(out[i] == (i < 32 ? 1e-3f : 0.0f));

  // SGD: p = 1 - 0.1 * 0.5 = 0.95. Momentum SGD, v = 0: v = 0.5, p = 0.95.
  // Adam (b1 0.9, b2 0.95), m = v = 0: m = 0.1 * 0.5 = 0.05, v = 0.05 * 0.25 =
  // 0.0125, p = 1 - 0.1 * 0.05 / (sqrt(0.0125) + 1e-8) = 1 - 0.0447214 = 0.9552786.
  for (int states : {0, 1, 2}) {
    INFO("states " << states);
    auto p = d.allocate(16), g = d.allocate(16), st = d.allocate(32);
    REQUIRE((p && g && st));
    REQUIRE(d.fill(*p, 4, core::Precision::fp32, 1.0f));
    REQUIRE(d.fill(*g, 4, core::Precision::fp32, 0.5f));
    OptimizerUpdate u;
    u.states = states;
    u.lr = 0.1f;
    REQUIRE(d.optimizer(static_cast<float*>(*p), static_cast<float*>(*g), static_cast<float*>(*st), 4, u));
    REQUIRE(d.synchronize());
    std::vector<float> pv(4);
    REQUIRE(cudaMemcpy(pv.data(), *p, 16, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (float x : pv) CHECK(x == Approx(states == 2 ? 0.9552786 : 0.95).epsilon(1e-6));
  }
}

TEST_CASE("the event timer, memory and versions", "[gpu][runtime_cuda]") {
  if (no_gpu()) return;
  auto made = make_cuda_device(0);
  REQUIRE(made);
  Device& d = **made;
  auto mem = d.memory();
  REQUIRE(mem);
  CHECK(mem->total.value > 0);
  CHECK(mem->free.value <= mem->total.value);
  // 64 MiB written: at least a few microseconds on any GPU, well under a second.
  auto buf = d.allocate(64 << 20);
  REQUIRE(buf);
  auto t = d.time([&] { return d.traffic(*buf, *buf, 64 << 20, 0, 64 << 20); }, 5);
  REQUIRE(t);
  CHECK(t->value > 1e-6);
  CHECK(t->value < 1.0);
  const auto v = d.versions();
  REQUIRE(v.size() == 4);
  CHECK(v[0].first == "cuda_driver");
  CHECK(v[3].first == "nccl");
  CHECK_FALSE(make_cuda_device(cuda_device_count()));  // one past the last device
}
