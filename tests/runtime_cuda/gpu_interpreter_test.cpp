// The GPU kernels against the CPU ones on a real GPU: device bf16 rounding
// of chosen bit patterns, the attention kernels against runtime_cpu's
// attention, and one GpuInterpreter training run per architecture that
// `planner model` emits for the executor (mlp, gpt, llama, bert), checked
// step by step against the CPU interpreter (train_on_gpu with check) in
// fp32 (1e-5) and bf16 (5e-2). Tagged [gpu]: registered only where a GPU
// was found at configure time; run by hand without one, each test returns
// at once after a warning.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <vector>

#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include "gpu_ops.hpp"  // src/runtime_cuda (white-box: the kernels themselves)
#include "../executor/model_import.hpp"
#include "planner/modelgen/modelgen.hpp"
#include "planner/onnx/importer.hpp"
#include "planner/runtime_cpu/attention.hpp"
#include "planner/runtime_cpu/rng.hpp"
#include "planner/runtime_cuda/gpu_train.hpp"

using namespace planner;
using namespace planner::runtime;
namespace km = planner::kernel_math;

namespace {

bool gpu_missing() {
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) return false;
  WARN("no GPU: skipped");
  return true;
}

/// The value of a Result that must hold one (move-only values too).
template <class T>
T take(Result<T> r) {
  if (!r.ok()) FAIL(r.error().message);
  return std::move(r).value();
}

modelgen::ModelSpec small(modelgen::Arch arch) {
  modelgen::ModelSpec s;
  s.arch = arch;
  s.layers = 2;
  s.hidden = 64;
  s.heads = 4;
  s.seq = 16;
  s.vocab = 128;
  s.width = 32;
  return s;
}

}  // namespace

TEST_CASE("device bf16 rounding equals the host's on chosen bit patterns", "[gpu][runtime_cuda][bf16]") {
  if (gpu_missing()) return;
  // x * 1 stored as bf16: the device kernel's rounding of each pattern.
  // 0x3f808000 (1 + 2^-8, a tie below even 0x3f80) -> 0x3f80; 0x3f818000
  // (a tie above odd 0x3f81) -> 0x3f82; 0x3f808001 -> 0x3f81; 0x7f7fffff
  // (largest float) -> 0x7f80 (infinity).
  const std::vector<std::uint32_t> bits{0x3f808000u, 0x3f818000u, 0x3f808001u, 0x7f7fffffu, 0xbfc00000u};
  const std::vector<std::uint16_t> want{0x3f80, 0x3f82, 0x3f81, 0x7f80, 0xbfc0};
  runtime_cpu::Tensor x(runtime_cpu::Shape{5});
  for (std::size_t i = 0; i < 5; ++i) x.data[i] = km::bits_float(bits[i]);
  auto y = gpu_ops::empty_tensor({5}, gpu_ops::Store::bf16);
  REQUIRE(y.ok());
  // fill() stores kernel_math::st(bf16, v) on the device, element by element.
  for (std::size_t i = 0; i < 5; ++i) {
    REQUIRE(gpu_ops::fill(gpu_ops::Store::bf16, static_cast<char*>(y->data()) + 2 * i, 1, x.data[i]) == cudaSuccess);
  }
  std::vector<std::uint16_t> got(5);
  REQUIRE(cudaMemcpy(got.data(), y->data(), 10, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(got == want);
}

TEST_CASE("attention kernels forward and backward equal runtime_cpu's to 1e-5", "[gpu][runtime_cuda][attention]") {
  if (gpu_missing()) return;
  for (const bool causal : {false, true}) {
    INFO("causal " << causal);
    using runtime_cpu::normal_tensor;
    const auto q = normal_tensor(3, "q", {1, 2, 6, 8}, 0, 1), k = normal_tensor(3, "k", {1, 2, 9, 8}, 0, 1);
    const auto v = normal_tensor(3, "v", {1, 2, 9, 5}, 0, 1), dy = normal_tensor(3, "dy", {1, 2, 6, 5}, 0, 1);
    const runtime_cpu::AttentionAttrs at{0.35f, causal};
    const auto y = runtime_cpu::attention(q, k, v, nullptr, at);
    const auto g = runtime_cpu::attention_backward(q, k, v, nullptr, at, dy);
    const km::AttnDims a{6, 9, 8, 5, 0.35f, causal};
    const auto S = gpu_ops::Store::f32;
    auto dq = take(gpu_ops::upload(q, S)), dk = take(gpu_ops::upload(k, S)), dv = take(gpu_ops::upload(v, S));
    auto ddy = take(gpu_ops::upload(dy, S));
    auto out = take(gpu_ops::empty_tensor(y.shape, S)), gq = take(gpu_ops::empty_tensor(q.shape, S));
    auto gk = take(gpu_ops::empty_tensor(k.shape, S)), gv = take(gpu_ops::empty_tensor(v.shape, S));
    auto acc = take(gpu_ops::device_alloc(2 * 9 * 13 * sizeof(float)));  // bh * max(Sq, Sk) * (D + Dv)
    auto rows = take(gpu_ops::device_alloc(2 * 6 * sizeof(km::AttnRow)));
    auto delta = take(gpu_ops::device_alloc(2 * 6 * sizeof(double)));
    REQUIRE(gpu_ops::attention(S, dq.data(), dk.data(), dv.data(), nullptr, a, 2, static_cast<float*>(acc.get()),
                               out.data()) == cudaSuccess);
    REQUIRE(gpu_ops::attention_backward(S, dq.data(), dk.data(), dv.data(), nullptr, ddy.data(), a, 2,
                                        static_cast<km::AttnRow*>(rows.get()), static_cast<double*>(delta.get()),
                                        static_cast<float*>(acc.get()), gq.data(), gk.data(), gv.data()) == cudaSuccess);
    const std::vector<std::pair<const gpu_ops::DTensor*, const runtime_cpu::Tensor*>> pairs{
        {&out, &y}, {&gq, &g.dq}, {&gk, &g.dk}, {&gv, &g.dv}};
    for (const auto& [dev, ref] : pairs) {
      auto h = gpu_ops::download(*dev);
      REQUIRE(h.ok());
      double scale = 1e-6;
      for (float r : ref->data) scale = std::max(scale, static_cast<double>(std::fabs(r)));
      for (std::int64_t i = 0; i < ref->size(); ++i) CHECK(std::fabs((*h)[i] - (*ref)[i]) <= 1e-5 * scale);
    }
  }
}

TEST_CASE("GPU interpreter trains mlp, gpt, llama and bert as the CPU interpreter does", "[gpu][runtime_cuda][interpreter]") {
  if (gpu_missing()) return;
  for (auto arch : {modelgen::Arch::mlp, modelgen::Arch::gpt, modelgen::Arch::llama, modelgen::Arch::bert}) {
    const auto g = planner::executor::testing::build_graph(small(arch), modelgen::arch_name(arch) + ".onnx");
    for (auto storage : {GpuStorage::f32, GpuStorage::bf16}) {
      INFO(modelgen::arch_name(arch) << (storage == GpuStorage::f32 ? " fp32" : " bf16"));
      GpuTrainOptions o;
      o.steps = 2;
      o.warmup = 1;
      o.check = true;
      o.storage = storage;
      o.tolerance = gpu_check_tolerance(storage);
      o.interpreter.seed = 11;
      o.optimizer = runtime_cpu::AdamWConfig{};
      auto r = train_on_gpu(g, o);
      REQUIRE(r.ok());
      CHECK(r->check_failure == "");
      REQUIRE(r->checked.size() == 3);
      for (const auto& c : r->checked) CHECK(c.max_rel_error <= o.tolerance);
    }
  }
}
