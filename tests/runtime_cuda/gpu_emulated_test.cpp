// The GPU op layer and interpreter of src/runtime_cuda on the CPU: the same
// sources compiled against the stand-in CUDA runtime and cuBLAS of
// host_cuda/ (device memory = host memory, kernels = host loops over the
// same kernel_math functions, cublasGemmEx = a column-major GEMM in
// double). What this proves without a GPU: the op layer's shapes, views,
// offsets, GEMM arguments, gradient bookkeeping, optimizer and bf16 storage
// paths train mlp, gpt, llama and bert as the CPU interpreter does. What it
// cannot: anything of the device itself (launches, memory, cuBLAS's own
// sums), which the [gpu] tests check where a GPU is present.
#include <catch2/catch.hpp>

#include <filesystem>

#include "../executor/model_import.hpp"
#include "../graph/graph_builder.hpp"
#include "planner/modelgen/modelgen.hpp"
#include "planner/onnx/importer.hpp"
#include "planner/runtime_cuda/gpu_interpreter.hpp"
#include "planner/runtime_cuda/gpu_train.hpp"

using namespace planner;
using namespace planner::runtime;

TEST_CASE("emulated GPU interpreter trains mlp, gpt, llama and bert as the CPU interpreter", "[runtime_cuda][emulated]") {
  for (auto arch : {modelgen::Arch::mlp, modelgen::Arch::gpt, modelgen::Arch::llama, modelgen::Arch::bert}) {
    modelgen::ModelSpec s;
    s.arch = arch;
    s.layers = 2;
    s.hidden = 32;
    s.heads = 4;
    s.seq = 8;
    s.vocab = 64;
    s.width = 16;
    const auto g = planner::executor::testing::build_graph(s, modelgen::arch_name(arch) + "-emulated.onnx");
    for (auto storage : {GpuStorage::f32, GpuStorage::bf16}) {
      for (int opt = 0; opt < 2; ++opt) {
        INFO(modelgen::arch_name(arch) << (storage == GpuStorage::f32 ? " fp32" : " bf16")
                                       << (opt == 0 ? " adamw" : " sgd momentum"));
        GpuTrainOptions o;
        o.steps = 2;
        o.warmup = 1;
        o.check = true;
        o.storage = storage;
        o.tolerance = gpu_check_tolerance(storage);
        o.interpreter.seed = 5;
        if (opt == 0) o.optimizer = runtime_cpu::AdamWConfig{};
        else o.optimizer = runtime_cpu::SgdConfig{0.05f, 0.9f, 0.01f};
        auto r = train_on_gpu(g, o);
        REQUIRE(r.ok());
        CHECK(r->check_failure == "");
        REQUIRE(r->checked.size() == 3);
        for (const auto& c : r->checked) {
          INFO("step " << c.step << ": " << c.worst << " " << c.max_rel_error);
          CHECK(c.max_rel_error <= o.tolerance);
        }
        REQUIRE(r->losses.size() == 3);
        CHECK(r->peak_device_bytes > 0);
      }
    }
  }
}

TEST_CASE("emulated GPU interpreter refuses an op variant the kernels lack before touching the device",
          "[runtime_cuda][emulated]") {
  // x [2,4] -> LayerNormalization (with its Mean output) -> loss: the same
  // check and line as runtime_cpu (check_supported), not a forward error.
  planner::testing::GraphBuilder b;
  const auto x = b.tensor("x", {2, 4}, graph::TensorRole::input);
  const auto w = b.param("ln.weight", {4});
  const auto y = b.tensor("y", {2, 4});
  const auto mean = b.tensor("ln.mean", {2, 1});
  const auto labels = b.tensor("labels", {2}, graph::TensorRole::input, core::DType::i64);
  const auto l = b.tensor("loss", {});
  b.op("ln", "LayerNormalization", {x, w}, {y, mean});
  b.op("xent", "SoftmaxCrossEntropyLoss", {y, labels}, {l});
  b.g.graph_outputs.push_back(l);
  auto it = GpuInterpreter::create(b.g, runtime_cpu::InterpreterOptions{}, GpuStorage::f32);
  REQUIRE_FALSE(it.ok());
  CHECK(it.error().message ==
        "op 'ln' (LayerNormalization): output 1 (Mean) is not implemented (the kernels compute output 0, Y, only)");
}
