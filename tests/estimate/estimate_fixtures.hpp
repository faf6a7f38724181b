#pragma once
// Shared by the estimate tests: a CostModel with round, exactly computable
// costs, and the graphs of tests/search (a Megatron GPT, an MLP).
//
// FakeCostModel:
//   every op     forward  fwd_ms  x OpScaling.flops
//                backward bwd_ms  x OpScaling.flops   (no recompute)
//                or, with flops_per_s > 0, the op's own forward and
//                backward FLOPs / flops_per_s x OpScaling.flops (so the
//                op-level search sees GEMMs as what matters)
//   collectives  bytes x seconds_per_byte (1 GB/s by default), no latency
//                (every call recorded in calls(): kind, bytes, placement)
//   memory()     a fixed breakdown (temporary 1 MB, the rest 0)
//   device       the a100-sxm4-80gb profile's device with HBM made round:
//                1 TB/s, efficiency 1, every memory-bound kernel at 1, so
//                the optimizer step streams at exactly 1e12 B/s.

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cost/cost_helpers.hpp"
#include "planner/cost/cost_model.hpp"
#include "planner/estimate/config.hpp"
#include "planner/estimate/estimate.hpp"
#include "sharding/sharding_fixtures.hpp"

namespace estimate_test {

using namespace planner;
using sharding::testing::ModelBuilder;

/// The a100 device with round HBM numbers (see the header comment).
inline cluster::DeviceProfile round_device() {
  auto d = cost_test::profile("a100-sxm4-80gb").device;
  d.hbm_bandwidth = BytesPerSecond(1e12);
  d.hbm_efficiency = 1.0;
  d.elementwise_table.rows = {{1.0, 1.0}};
  // No spread across devices unless a test asks for one (FakeCostModel's
  // step_time_cv constructor): the hand-worked steps are the typical
  // device's.
  d.step_time_cv.reset();
  return d;
}

inline cost::ComputeContext round_context(cost::RecomputePolicy r = cost::RecomputePolicy::none) {
  auto c = cost::ComputeContext::create(round_device(), cost::PrecisionPolicy{}, cost::AttentionMode::flash, r);
  if (!c.ok()) FAIL(c.error().message);
  return std::move(c).value();
}

class FakeCostModel final : public cost::CostModel {
 public:
  double fwd_ms = 1.0;
  double bwd_ms = 2.0;
  double seconds_per_byte = 1e-9;
  double seconds_per_call = 0;  // each collective's latency
  double flops_per_s = 0;
  Bytes capacity = Bytes(80e9);
  Bytes temporary = Bytes(1e6);

  explicit FakeCostModel(cost::RecomputePolicy r = cost::RecomputePolicy::none) : ctx_(round_context(r)) {}
  /// With a device whose step time spreads by `step_time_cv` across devices.
  explicit FakeCostModel(double step_time_cv) : ctx_(round_context()) {
    auto d = round_device();
    d.step_time_cv = step_time_cv;
    auto c = cost::ComputeContext::create(d, cost::PrecisionPolicy{}, cost::AttentionMode::flash,
                                          cost::RecomputePolicy::none);
    if (!c.ok()) FAIL(c.error().message);
    ctx_ = std::move(c).value();
  }

  cost::OpTime op_time(const graph::Op& op, const graph::OpGraph&, const cost::OpScaling& s) const override {
    cost::OpTime t;
    if (flops_per_s > 0) {
      t.forward = Seconds(op.cost.forward_flops.value / flops_per_s * s.flops);
      t.backward = Seconds(op.cost.backward_flops.value / flops_per_s * s.flops);
    } else {
      t.forward = Seconds(fwd_ms * 1e-3 * s.flops);
      t.backward = Seconds(bwd_ms * 1e-3 * s.flops);
    }
    t.forward_kernels = t.backward_kernels = 1;
    return t;
  }
  Result<Seconds> collective(core::Collective kind, Bytes m, cluster::Placement where) const override {
    const std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(Call{kind, m, where});
    return Seconds(m.value * seconds_per_byte + seconds_per_call);
  }
  cost::MemoryBreakdown memory(const graph::OpGraph&, const cost::MemorySetup&) const override {
    cost::MemoryBreakdown b;
    b.temporary = temporary;
    b.temporary_op = "fake";
    return b;
  }
  Bytes device_memory() const override { return capacity; }
  FlopsPerSecond peak() const override { return FlopsPerSecond(1e12); }
  const cost::ComputeContext& context() const override { return ctx_; }

  struct Call {
    core::Collective kind;
    Bytes bytes;
    cluster::Placement where;
  };
  std::vector<Call> calls() const {
    const std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  void clear_calls() const {
    const std::lock_guard<std::mutex> lock(mu_);
    calls_.clear();
  }

 private:
  cost::ComputeContext ctx_;
  mutable std::mutex mu_;
  mutable std::vector<Call> calls_;
};

// The collectives of one kind the estimate asked the fake to cost, in order.
inline std::vector<FakeCostModel::Call> calls_of(const FakeCostModel& m, core::Collective kind) {
  std::vector<FakeCostModel::Call> out;
  for (const auto& c : m.calls())
    if (c.kind == kind) out.push_back(c);
  return out;
}

/// Batch axes of activations as the ONNX importer derives them: an op's
/// output inherits the batch axis of an input whose dims up to and
/// including that axis it keeps (the builders mark graph inputs only).
inline void mark_batch_axes(graph::OpGraph& g) {
  for (std::uint32_t i = 0; i < g.num_ops(); ++i) {
    const auto& op = g.op(graph::OpId{i});
    for (const auto& out : op.outputs) {
      if (!out) continue;
      auto& x = g.tensor(*out);
      if (x.role != graph::TensorRole::activation || x.batch_axis) continue;
      for (const auto& in : op.inputs) {
        if (!in) continue;
        const auto& t = g.tensor(*in);
        if (!t.batch_axis) continue;
        const auto a = static_cast<std::size_t>(*t.batch_axis);
        if (a >= x.shape.size() || a >= t.shape.size()) continue;
        if (std::equal(t.shape.begin(), t.shape.begin() + static_cast<std::ptrdiff_t>(a) + 1, x.shape.begin())) {
          x.batch_axis = t.batch_axis;
          break;
        }
      }
    }
  }
}

/// x[B,h] -> fc1 (h x ffn, bias) -> Relu -> fc2 (ffn x classes, bias) ->
/// cross-entropy: 6 ops (fc1/MatMul, fc1/Add, relu, fc2/MatMul, fc2/Add,
/// loss), h*ffn + ffn + ffn*classes + classes parameters, no layers.
inline graph::OpGraph mlp(std::int64_t B, std::int64_t h, std::int64_t ffn, std::int64_t classes) {
  ModelBuilder b;
  b.mlp(B, h, ffn, classes);
  mark_batch_axes(b.g);
  return std::move(b.g);
}

/// A mixture-of-experts MLP: x[B,h] -> pre (h x h) -> E experts, expert e
/// `moe/experts.<e>/fc1` (h x f) -> Relu -> `moe/experts.<e>/fc2` (f x h),
/// each on all B tokens -> summed (E-1 Adds) -> head (h x classes) -> loss.
/// The analysis finds experts 1..E-1 (each with its Add) as E-1 repeated
/// blocks (layers).
/// Ops: 1 + 3E + (E-1) + 2; parameters h*h + E*2*h*f +
/// h*classes, the experts' E*2*h*f.
inline graph::OpGraph moe_mlp(std::int64_t B, std::int64_t h, std::int64_t f, int E, std::int64_t classes) {
  ModelBuilder b;
  auto x = b.input("x", {B, h}, core::DType::f32);
  auto labels = b.input("labels", {B}, core::DType::i64);
  auto pre = b.linear("pre", x, h, h, false);
  std::optional<graph::TensorId> sum;
  for (int e = 0; e < E; ++e) {
    const std::string n = "moe/experts." + std::to_string(e);
    auto u = b.linear(n + "/fc1", pre, h, f, false);
    auto r = b.op(n + "/relu", "Relu", {u}, b.shape(u));
    auto y = b.linear(n + "/fc2", r, f, h, false);
    sum = sum ? b.op("moe/sum" + std::to_string(e), "Add", {*sum, y}, b.shape(y)) : y;
  }
  auto logits = b.linear("head", *sum, h, classes, false);
  auto loss = b.op("loss", "SoftmaxCrossEntropyLoss", {logits, labels}, {}, {{"reduction", std::string("mean")}});
  b.g.graph_outputs.push_back(loss);
  b.finish();
  mark_batch_axes(b.g);
  return std::move(b.g);
}

/// The Megatron GPT of tests/search (learned positions, pre-LN, fused QKV,
/// causal attention, erf-GeLU MLP of width ffn, final LN, untied head).
/// Ops: 5 before the layers (embed/tokens, embed/positions, embed/Add and
/// the causal mask's ConstantOfShape, Trilu), 31 per layer (ln1; qkv
/// MatMul, Add; Split; Reshape + Transpose for q, k, v; scores MatMul, Mul,
/// Add; Softmax; context MatMul, Transpose, Reshape; proj MatMul, Add;
/// residual; ln2; fc1 MatMul, Add; GeLU Div, Erf, Add, Mul, Mul; fc2
/// MatMul, Add; residual), 5 after (final_ln, lm_head, two Reshapes, loss).
/// Batch axes marked as the importer would (mark_batch_axes).
inline graph::OpGraph gpt(std::int64_t B, std::int64_t S, std::int64_t h, std::int64_t heads, std::int64_t ffn,
                          std::int64_t V, int layers, bool tied = false) {
  ModelBuilder b;
  b.gpt(B, S, h, heads, ffn, V, layers, tied);
  mark_batch_axes(b.g);
  return std::move(b.g);
}

/// The GPT most tests use: B=2 S=16 h=64 heads=4 ffn=256 V=128. Parameters:
///   embeddings   tokens 128*64 = 8192, positions 16*64 = 1024     9,216
///   per layer    ln1 2*64 = 128; qkv 64*192 + 192 = 12,480;
///                proj 64*64 + 64 = 4,160; ln2 128;
///                fc1 64*256 + 256 = 16,640; fc2 256*64 + 64 = 16,448  49,984
///   head         final_ln 128, lm_head 64*128 = 8,192                8,320
inline graph::OpGraph small_gpt(int layers) { return gpt(2, 16, 64, 4, 256, 128, layers); }
constexpr double kEmbeddingParams = 9216, kLayerParams = 49984, kHeadParams = 8320;
constexpr int kPreOps = 5, kLayerOps = 31, kPostOps = 5;

/// A config for `devices` = dp * tp * pp with global batch = micro-batch *
/// dp * m.
inline estimate::ParallelConfig config_for(int dp, int tp, int pp, std::int64_t m, int micro_batch = 1) {
  estimate::ParallelConfig c;
  c.dp = dp;
  c.tp = tp;
  c.pp = pp;
  c.micro_batch = micro_batch;
  c.global_batch = m * micro_batch * dp;
  return c;
}

inline estimate::Estimate run(const graph::OpGraph& g, const cost::CostModel& model,
                              const estimate::ParallelConfig& c) {
  auto e = estimate::estimate(g, model, c);
  if (!e.ok()) FAIL(e.error().message);
  return std::move(e).value();
}

/// Sum of the breakdown fields that make up the step.
inline double breakdown_sum(const estimate::Estimate& e) {
  return e.compute.value + e.recompute.value + e.model_parallel.total().value + e.zero3_exposed.value +
         e.grad_accumulation.value + e.bubble.value + e.dp_exposed.value + e.optimizer.value + e.straggler.value;
}

}  // namespace estimate_test
