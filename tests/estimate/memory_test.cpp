// Memory per pipeline stage: local parameters under tensor parallelism,
// model state under each ZeRO stage, activations times what the schedule
// keeps in flight, the loss buffer on the last stage, and the advice when
// a layout does not fit. Numbers by hand for the GPT of estimate_fixtures.hpp
// (bf16 policy: embeddings, read by Gather, are kept in fp32).

#include <catch2/catch.hpp>

#include "estimate/estimate_fixtures.hpp"
#include "planner/cost/activations.hpp"

using namespace estimate_test;
using estimate::Framework;

namespace {

Approx rel(double v) { return Approx(v).epsilon(1e-12).margin(1e-9); }

// Activation bytes of one micro-batch saved by ops [first, last) of g.
double saved_between(const graph::OpGraph& g, std::uint32_t first, std::uint32_t last) {
  cost::ActivationOptions ao;
  const auto rep = cost::saved_activations(g, ao);
  double b = 0;
  for (const auto& item : rep.items)
    if (item.saver.value >= first && item.saver.value < last) b += item.bytes.value;
  return b;
}

}  // namespace

TEST_CASE("estimate memory: tp=2: column- and row-parallel weights halved, norms, row biases and embeddings whole",
          "[estimate][memory]") {
  // Op times proportional to FLOPs: the search picks Megatron's layout for
  // the layers (QKV and fc1 column-parallel with their biases, projection
  // and fc2 row-parallel with whole biases) and a column-parallel LM head;
  // the embeddings' Gathers have no FLOPs worth splitting.
  FakeCostModel fake;
  fake.flops_per_s = 1e9;
  // Local parameters per layer:
  //   ln1 128 + qkv 12,288/2 + 192/2 + proj 4,096/2 + 64 + ln2 128
  //   + fc1 16,384/2 + 256/2 + fc2 16,384/2 + 64
  //   = 128 + 6,144 + 96 + 2,048 + 64 + 128 + 8,192 + 128 + 8,192 + 64 = 25,184
  // Head: final_ln 128 + lm_head 8,192/2 = 4,224. Embeddings 9,216.
  constexpr double layer = 25184, head = 4224;
  SECTION("one stage, 2 layers") {
    const auto e = run(small_gpt(2), fake, config_for(1, 2, 1, 4));
    CHECK(e.parameters == 117'504);  // 9,216 + 2 x 49,984 + 8,320
    REQUIRE(e.stages.size() == 1);
    // 9,216 + 2 x 25,184 + 4,224 = 63,808.
    CHECK(e.stages[0].parameters == kEmbeddingParams + 2 * layer + head);
    CHECK(e.stages[0].parameters == 63'808);
  }
  SECTION("two stages, 4 layers") {
    const auto e = run(small_gpt(4), fake, config_for(1, 2, 2, 4));
    REQUIRE(e.stages.size() == 2);
    CHECK(e.stages[0].parameters == 59'584);  // 9,216 + 2 x 25,184
    CHECK(e.stages[1].parameters == 54'592);  // 2 x 25,184 + 4,224
  }
}

TEST_CASE("estimate memory: model state per stage under each optimizer sharding", "[estimate][memory]") {
  // 4 layers, pp = 2, dp = 2. Stage 0: embeddings 9,216 (fp32) + 2 layers
  // 99,968 (bf16) = 109,184 parameters; stage 1: 2 layers + head = 108,288,
  // all bf16. Adam, bytes per parameter W + G + O:
  //   bf16   2 + 4 (Megatron's fp32 main grads) + 12
  //   fp32   4 + 4 + 8
  const auto g = small_gpt(4);
  const FakeCostModel fake;
  auto c = config_for(2, 1, 2, 4);
  auto stage = [&](int s) {
    const auto e = run(g, fake, c);
    REQUIRE(e.stages.size() == 2);
    return e.stages[static_cast<std::size_t>(s)];
  };
  SECTION("no sharding") {
    const auto s0 = stage(0), s1 = stage(1);
    CHECK(s0.parameters == 109'184);
    CHECK(s0.parameters == kEmbeddingParams + 2 * kLayerParams);
    CHECK(s1.parameters == 108'288);
    CHECK(s1.parameters == 2 * kLayerParams + kHeadParams);
    // W0 = 2 x 99,968 + 4 x 9,216 = 236,800; G0 = 4 x 109,184 = 436,736;
    // O0 = 12 x 99,968 + 8 x 9,216 = 1,273,344.
    CHECK(s0.breakdown.weights.value == rel(236'800));
    CHECK(s0.breakdown.gradients.value == rel(436'736));
    CHECK(s0.breakdown.optimizer_states.value == rel(1'273'344));
    // W1 = 2 x 108,288 = 216,576; G1 = 433,152; O1 = 12 x 108,288 = 1,299,456.
    CHECK(s1.breakdown.weights.value == rel(216'576));
    CHECK(s1.breakdown.gradients.value == rel(433'152));
    CHECK(s1.breakdown.optimizer_states.value == rel(1'299'456));
    CHECK(s0.breakdown.state_label == "adam, none");
  }
  SECTION("ZeRO-1 halves the optimizer states over d = 2, nothing else") {
    c.zero = 1;
    const auto s0 = stage(0), s1 = stage(1);
    CHECK(s0.breakdown.weights.value == rel(236'800));
    CHECK(s0.breakdown.gradients.value == rel(436'736));
    CHECK(s0.breakdown.optimizer_states.value == rel(1'273'344 / 2.0));
    CHECK(s1.breakdown.optimizer_states.value == rel(1'299'456 / 2.0));
    CHECK(s0.breakdown.state_label == "adam, zero1 over d=2");
  }
  SECTION("ZeRO-2 also the gradients") {
    c.zero = 2;
    const auto s0 = stage(0);
    CHECK(s0.breakdown.weights.value == rel(236'800));
    CHECK(s0.breakdown.gradients.value == rel(218'368));
    CHECK(s0.breakdown.optimizer_states.value == rel(636'672));
    CHECK(s0.breakdown.gathered_weights.value == 0);
  }
  SECTION("ZeRO-3 everything, plus the largest layer's bf16 weights gathered twice") {
    c.zero = 3;
    const auto s0 = stage(0);
    CHECK(s0.breakdown.weights.value == rel(118'400));
    CHECK(s0.breakdown.gradients.value == rel(218'368));
    CHECK(s0.breakdown.optimizer_states.value == rel(636'672));
    // A layer: 49,984 bf16 parameters = 99,968 B (more than the fp32 token
    // table's 32,768 B); current + prefetched = 199,936 B.
    CHECK(s0.breakdown.gathered_weights.value == rel(199'936));
  }
  SECTION("the distributed optimizer keeps fp32 gradients where the framework would not") {
    c.framework = Framework::ddp;  // 16-bit gradients for bf16 parameters
    c.zero = 1;
    // G0 = 2 x 99,968 + 4 x 9,216 = 236,800 under ZeRO-1 ...
    CHECK(stage(0).breakdown.gradients.value == rel(236'800));
    // ... but 4 x 109,184 = 436,736 with the distributed optimizer.
    c.zero = 0;
    c.distributed_optimizer = true;
    const auto s0 = stage(0);
    CHECK(s0.breakdown.gradients.value == rel(436'736));
    CHECK(s0.breakdown.optimizer_states.value == rel(636'672));
  }
  SECTION("bf16 optimizer states without a master copy (--optimizer-state-dtype bf16 --master-weights none)") {
    c.optimizer_state_bytes = 2;
    c.master_weights = cost::MasterWeights::none;
    const auto s0 = stage(0), s1 = stage(1);
    // bf16 parameters: O = 0 master + 2 x 2 (m, v) = 4 B; fp32 ones keep 8.
    // O0 = 4 x 99,968 + 8 x 9,216 = 473,600; O1 = 4 x 108,288 = 433,152.
    CHECK(s0.breakdown.optimizer_states.value == rel(473'600));
    CHECK(s1.breakdown.optimizer_states.value == rel(433'152));
    CHECK(s0.breakdown.weights.value == rel(236'800));
    CHECK(s0.breakdown.state_label == "adam (bf16 states, no master copy), none");
    // 16-bit master remainders with fp32 states: O1 = (2 + 8) x 108,288 = 1,082,880.
    c.optimizer_state_bytes = 4;
    c.master_weights = cost::MasterWeights::remainder;
    CHECK(stage(1).breakdown.optimizer_states.value == rel(1'082'880));
  }
}

TEST_CASE("estimate memory: activations: 1F1B's first stage holds p micro-batches, the last one, GPipe all m",
          "[estimate][memory]") {
  // 4 layers over 2 stages: chunk 0 = ops [0, 67) (embedding + layers 0-1),
  // chunk 1 = ops [67, 134).
  const auto g = small_gpt(4);
  const double a0 = saved_between(g, 0, 67), a1 = saved_between(g, 67, 134);
  REQUIRE(a0 > 0);
  REQUIRE(a1 > 0);
  // Loss buffer: fp32 log-probabilities b*s*V = 2 x 16 x 128 x 4 B = 16,384 B
  // per micro-batch, on the last stage only.
  constexpr double loss = 16384;
  const FakeCostModel fake;
  auto c = config_for(1, 1, 2, 4);
  SECTION("1F1B") {
    const auto e = run(g, fake, c);
    const auto& s0 = e.stages[0].breakdown;
    const auto& s1 = e.stages[1].breakdown;
    CHECK(e.stages[0].in_flight == 2);
    CHECK(e.stages[1].in_flight == 1);
    CHECK(s0.activations.value == rel(2 * a0));
    CHECK(s1.activations.value == rel(a1));
    CHECK(s0.loss_buffer.value == 0);
    CHECK(s1.loss_buffer.value == rel(loss));
    // The reserve: the fake's 1 MB temporary; no context or communicator;
    // the A100 profile's fragmentation, 0.15 of the reserved peak: 0.15 /
    // 0.85 of everything allocated, the peak allocated / 0.85.
    for (const auto& s : e.stages) {
      const auto& b = s.breakdown;
      CHECK(b.temporary.value == 1e6);
      const double allocated = b.weights.value + b.gradients.value + b.optimizer_states.value +
                               b.gathered_weights.value + b.activations.value + b.loss_buffer.value +
                               b.recompute_working_set.value + b.temporary.value;
      CHECK(b.fragmentation.value == rel(0.15 / 0.85 * allocated));
      CHECK(s.peak().value == rel(allocated / 0.85));
    }
    // Stage 0: (236,800 + 436,736 + 1,273,344 + 2 a0 + 1e6) / 0.85.
    CHECK(e.stages[0].peak().value == rel((236'800 + 436'736 + 1'273'344 + 2 * a0 + 1e6) / 0.85));
    CHECK(e.capacity.value == 80e9);
    CHECK(e.fits);
  }
  SECTION("GPipe") {
    c.schedule = sim::Schedule::gpipe;
    const auto e = run(g, fake, c);
    CHECK(e.stages[0].in_flight == 4);
    CHECK(e.stages[0].breakdown.activations.value == rel(4 * a0));
    CHECK(e.stages[1].breakdown.activations.value == rel(4 * a1));
    CHECK(e.stages[1].breakdown.loss_buffer.value == rel(4 * loss));
  }
}

TEST_CASE("estimate memory: a layout that does not fit gets advice, fitting changes first, each saving memory",
          "[estimate][memory][advice]") {
  // 4 layers, dp = 4, one stage: 217,472 parameters (9,216 fp32).
  const auto g = small_gpt(4);
  const auto c = config_for(4, 1, 1, 4);
  double before = 0;
  {
    const FakeCostModel roomy;
    const auto e = run(g, roomy, c);
    CHECK(e.fits);
    CHECK(e.advice.empty());
    // What must fit is the allocated peak; the reserved one adds the A100
    // profile's fragmentation (0.15 of reserved: 0.15 / 0.85 of allocated) on
    // everything but the context and communicator.
    before = e.peak_stage().allocated().value;
    const auto& b = e.peak_stage().breakdown;
    CHECK(e.peak_stage().peak().value ==
          rel(before + 0.15 / 0.85 * (before - b.cuda_context.value - b.communicator.value)));
  }
  // ZeRO-1 over d = 4 shrinks the optimizer states from 12 x 208,256 +
  // 8 x 9,216 = 2,572,800 B to a quarter, 643,200 B: 1,929,600 B allocated
  // (advice counts allocated bytes: the fragmentation is the allocator's
  // cache, freed and retried before an out-of-memory).
  constexpr double zero1_saves = 1'929'600;
  // A capacity ZeRO-1 alone falls just short of.
  FakeCostModel tight;
  tight.capacity = Bytes(before - zero1_saves - 1000);
  const auto e = run(g, tight, c);
  CHECK_FALSE(e.fits);
  REQUIRE(e.advice.size() >= 3);
  const estimate::Advice* zero1 = nullptr;
  bool seen_not_fitting = false;
  for (std::size_t i = 0; i < e.advice.size(); ++i) {
    const auto& a = e.advice[i];
    INFO(a.change);
    CHECK(a.saves.value > 0);
    // fits <=> what is left fits the capacity.
    CHECK(a.fits == (before - a.saves.value <= tight.capacity.value + 1e-6));
    // Fitting entries first, then by saving, largest first.
    if (!a.fits) seen_not_fitting = true;
    else CHECK_FALSE(seen_not_fitting);
    if (i > 0 && e.advice[i - 1].fits == a.fits) CHECK(e.advice[i - 1].saves.value >= a.saves.value);
    if (a.change == "`zero` 1") zero1 = &a;
  }
  REQUIRE(zero1 != nullptr);
  CHECK(zero1->saves.value == rel(zero1_saves));
  CHECK_FALSE(zero1->fits);
  // Splitting the model over twice the tensor- or pipeline-parallel ranks
  // saves more than ZeRO-1 and fits.
  CHECK(e.advice.front().fits);
  bool has_tp = false, has_pp = false, has_recompute = false;
  for (const auto& a : e.advice) {
    has_tp = has_tp || a.change == "`tp` 2 `dp` 2";
    has_pp = has_pp || a.change == "`pp` 2 `dp` 2";
    has_recompute = has_recompute || a.change == "`recompute` full";
  }
  CHECK(has_tp);
  CHECK(has_pp);
  CHECK(has_recompute);
}

TEST_CASE("estimate memory: status fits / at risk / does not fit by the profile's margin", "[estimate][memory]") {
  // Capacity 100 B, margin 10 %: at risk above 90 B, does not fit above 100.
  estimate::Estimate e;
  e.capacity = Bytes(100);
  e.memory_margin = 0.1;
  e.stages.resize(2);
  e.stages[0].breakdown.weights = Bytes(50);
  auto at = [&](double peak, bool fits) {
    e.stages[1].breakdown.weights = Bytes(peak);
    e.fits = fits;
    return std::string(e.memory_status());
  };
  CHECK(at(90, true) == "fits");
  CHECK(at(90.5, true) == "at risk");
  CHECK(at(100, true) == "at risk");
  CHECK(at(100.5, false) == "does not fit");
  e.memory_margin = 0;  // no margin: nothing is at risk
  CHECK(at(100, true) == "fits");
}
