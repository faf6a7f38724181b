// The exporters on plans built in code: GPT-3 175B on 1024 devices
// (tp 8 x pp 16 interleaved, distributed optimizer / ZeRO, full recompute),
// uneven pipeline cuts, op-level sharding beyond Megatron's patterns, and
// what each framework cannot express.

#include <algorithm>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "exporters/plan_fixture.hpp"
#include "planner/exporters/exporters.hpp"

namespace ex = planner::exporters;
using ex::testing::make_plan;
using ex::testing::PlanSpec;

namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

bool any_contains(const std::vector<std::string>& v, const std::string& part) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(part) != std::string::npos; });
}

ex::Export run(const planner::plan::Plan& p, ex::Framework f, std::string version = {}) {
  REQUIRE(planner::plan::validate(p).ok());
  auto out = ex::export_plan(p, f, {std::move(version), "plan.json"});
  REQUIRE(out.ok());
  return std::move(out).value();
}

}  // namespace

TEST_CASE("GPT-3 175B plan as Megatron-LM arguments", "[exporters][megatron]") {
  const auto p = make_plan(ex::testing::gpt3_175b());
  const auto out = run(p, ex::Framework::megatron);
  const auto& t = out.text;
  CHECK(has_line(t, "  --num-layers 96"));
  CHECK(has_line(t, "  --tensor-model-parallel-size 8"));
  CHECK(has_line(t, "  --pipeline-model-parallel-size 16"));
  // 96 layers / (16 ranks x 2 chunks) = 3 layers per virtual stage.
  CHECK(has_line(t, "  --num-layers-per-virtual-pipeline-stage 3"));
  CHECK(has_line(t, "  --sequence-parallel"));
  CHECK(has_line(t, "  --use-distributed-optimizer"));
  CHECK(has_line(t, "  --micro-batch-size 1"));
  // 1 sample x 8 replicas x 192 micro-batches.
  CHECK(has_line(t, "  --global-batch-size 1536"));
  CHECK(has_line(t, "  --recompute-granularity full"));
  CHECK(has_line(t, "  --recompute-method uniform"));
  CHECK(has_line(t, "  --recompute-num-layers 1"));
  CHECK(has_line(t, "  --bf16"));
  CHECK(has_line(t, "  --lr 6e-05"));
  CHECK(t.find("--context-parallel-size") == std::string::npos);  // cp = 1
  CHECK(t.find("--decoder-first-pipeline-num-layers") == std::string::npos);  // even cut
  // Megatron's own patterns: nothing is lost.
  CHECK(out.warnings.empty());
  CHECK(t.find("LOST") == std::string::npos);
  // Deterministic.
  CHECK(run(p, ex::Framework::megatron).text == t);
}

TEST_CASE("Megatron's tied output layer follows the plan's shared weights", "[exporters][megatron]") {
  auto p = make_plan(ex::testing::gpt3_175b());
  const std::string untie = "  --untie-embeddings-and-output-weights";
  // A plan from before model.shared_weights: unknown, Megatron's default
  // (tied) stays and a note says so.
  p.model.shared_weights.reset();
  auto out = run(p, ex::Framework::megatron);
  CHECK_FALSE(has_line(out.text, untie));
  CHECK(out.text.find("Megatron ties them unless --untie-embeddings-and-output-weights") != std::string::npos);
  // A model with its own output layer: untied.
  p.model.shared_weights = std::vector<std::string>{};
  out = run(p, ex::Framework::megatron);
  CHECK(has_line(out.text, untie));
  // A tied model: Megatron's default.
  p.model.shared_weights = std::vector<std::string>{"embed.tokens.weight"};
  out = run(p, ex::Framework::megatron);
  CHECK_FALSE(has_line(out.text, untie));
  CHECK(out.text.find("--untie-embeddings-and-output-weights") == std::string::npos);
}

TEST_CASE("GPT-3 175B with ZeRO-3: Megatron FSDP on core_v0.12.0, lost on core_v0.8.0", "[exporters][megatron]") {
  auto spec = ex::testing::gpt3_175b();
  spec.distributed_optimizer = false;
  spec.zero = 3;
  const auto p = make_plan(spec);
  const auto v12 = run(p, ex::Framework::megatron);
  CHECK(has_line(v12.text, "  --use-custom-fsdp"));
  CHECK(has_line(v12.text, "  --data-parallel-sharding-strategy optim_grads_params"));
  CHECK(has_line(v12.text, "  --use-distributed-optimizer"));
  CHECK(v12.warnings.empty());
  const auto v8 = run(p, ex::Framework::megatron, "core_v0.8.0");
  CHECK(v8.text.find("--use-custom-fsdp") == std::string::npos);
  REQUIRE(v8.warnings.size() == 1);
  CHECK(v8.warnings[0].find("ZeRO-3") != std::string::npos);
  CHECK(v8.text.find("# LOST: ZeRO-3") != std::string::npos);
}

TEST_CASE("bf16 optimizer states: Megatron's precision-aware optimizer, the master-weight policy is lost everywhere",
          "[exporters]") {
  auto p = make_plan(ex::testing::gpt3_175b());
  p.training.optimizer.state_dtype = "bf16";
  const auto v12 = run(p, ex::Framework::megatron);
  CHECK(has_line(v12.text, "  --use-precision-aware-optimizer"));
  CHECK(has_line(v12.text, "  --exp-avg-dtype bf16"));
  CHECK(has_line(v12.text, "  --exp-avg-sq-dtype bf16"));
  CHECK(v12.warnings.empty());
  const auto v8 = run(p, ex::Framework::megatron, "core_v0.8.0");
  CHECK(v8.text.find("--use-precision-aware-optimizer") == std::string::npos);
  CHECK(any_contains(v8.warnings, "bf16 optimizer states"));
  p.training.optimizer.master_weights = "none";
  for (auto f : {ex::Framework::megatron, ex::Framework::deepspeed, ex::Framework::torchtitan, ex::Framework::mindspore})
    CHECK(any_contains(run(p, f).warnings, "master weights 'none'"));
  for (auto f : {ex::Framework::deepspeed, ex::Framework::torchtitan, ex::Framework::mindspore})
    CHECK(any_contains(run(p, f).warnings, "optimizer state dtype bf16"));
}

TEST_CASE("GPT-3 175B plan as a DeepSpeed config", "[exporters][deepspeed]") {
  auto spec = ex::testing::gpt3_175b();
  const auto out = run(make_plan(spec), ex::Framework::deepspeed);
  const auto j = nlohmann::json::parse(out.text, nullptr, true, /*ignore_comments=*/false);
  // train_batch_size = micro-batch 1 x accumulation 192 x data-parallel 8.
  CHECK(j["train_batch_size"] == 1536);
  CHECK(j["train_micro_batch_size_per_gpu"] == 1);
  CHECK(j["gradient_accumulation_steps"] == 192);
  CHECK(j["zero_optimization"]["stage"] == 1);  // the distributed optimizer
  CHECK(j["bf16"]["enabled"] == true);
  CHECK(j["tensor_parallel"]["autotp_size"] == 8);
  CHECK(j["activation_checkpointing"]["partition_activations"] == true);
  CHECK(j["activation_checkpointing"]["number_checkpoints"] == 96);
  CHECK(j["pipeline"]["activation_checkpoint_interval"] == 1);
  CHECK(j["optimizer"]["params"]["betas"] == nlohmann::json::array({0.9, 0.95}));
  // Interleaving and sequence parallelism are lost, each named.
  CHECK(out.warnings.size() == 2);
  CHECK(any_contains(out.warnings, "interleaved schedule (2 chunks per rank)"));
  CHECK(any_contains(out.warnings, "sequence parallelism"));
  // Strict JSON: the losses and notes are in notes_text, not in the file.
  CHECK(out.text.find("//") == std::string::npos);
  CHECK(out.text.front() == '{');
  CHECK_FALSE(out.comments_in_text);
  CHECK(out.notes_text.rfind("DeepSpeed v0.16.9 config exported by planner ", 0) == 0);
  CHECK(out.notes_text.find("\nLOST: interleaved schedule") != std::string::npos);
  CHECK(out.notes_text.find("\nnote: pipeline: deepspeed.pipe.PipelineModule(layers, num_stages=16") != std::string::npos);
}

TEST_CASE("every exporter's notes_text holds its header, losses and notes without comment markers",
          "[exporters]") {
  auto spec = ex::testing::gpt3_175b();
  for (auto f : {ex::Framework::megatron, ex::Framework::deepspeed, ex::Framework::torchtitan, ex::Framework::mindspore}) {
    const auto out = run(make_plan(spec), f);
    INFO(ex::framework_name(f));
    std::size_t lost = 0, notes = 0;
    for (std::size_t b = 0; b < out.notes_text.size();) {
      const auto e = out.notes_text.find('\n', b);
      REQUIRE(e != std::string::npos);
      const auto line = out.notes_text.substr(b, e - b);
      CHECK(line.rfind("# ", 0) != 0);
      CHECK(line.rfind("// ", 0) != 0);
      lost += line.rfind("LOST: ", 0) == 0;
      notes += line.rfind("note: ", 0) == 0;
      b = e + 1;
    }
    CHECK(lost == out.warnings.size());
    CHECK(notes == out.notes.size());
    // Formats with comments also carry them in the file, prefixed.
    CHECK(out.comments_in_text == (f != ex::Framework::deepspeed));
    if (out.comments_in_text)
      for (const auto& w : out.warnings) CHECK(out.text.find("# LOST: " + w + "\n") != std::string::npos);
  }
}

TEST_CASE("DeepSpeed: ZeRO-3 with a pipeline is exported as stage 1 with a warning", "[exporters][deepspeed]") {
  auto spec = ex::testing::gpt3_175b();
  spec.distributed_optimizer = false;
  spec.zero = 3;
  spec.vp = 1;
  spec.sequence_parallel = false;
  const auto out = run(make_plan(spec), ex::Framework::deepspeed);
  const auto j = nlohmann::json::parse(out.text, nullptr, true, /*ignore_comments=*/false);
  CHECK(j["zero_optimization"]["stage"] == 1);
  REQUIRE(out.warnings.size() == 1);
  CHECK(out.warnings[0].find("ZeRO-3 with pipeline parallelism") != std::string::npos);
  // Without a pipeline ZeRO-3 is kept.
  spec.pp = 1;
  spec.dp = 128;
  spec.micro_batches = 12;  // 1 x 128 x 12 = 1536
  const auto flat = run(make_plan(spec), ex::Framework::deepspeed);
  const auto k = nlohmann::json::parse(flat.text, nullptr, true, true);
  CHECK(k["zero_optimization"]["stage"] == 3);
  CHECK(k["train_batch_size"] == 1536);
  CHECK(flat.warnings.empty());
}

TEST_CASE("GPT-3 175B plan as a torchtitan TOML", "[exporters][torchtitan]") {
  const auto out = run(make_plan(ex::testing::gpt3_175b()), ex::Framework::torchtitan);
  const auto& t = out.text;
  CHECK(has_line(t, "tensor_parallel_degree = 8"));
  CHECK(has_line(t, "pipeline_parallel_degree = 16"));
  CHECK(has_line(t, "data_parallel_shard_degree = 8"));
  CHECK(has_line(t, "data_parallel_replicate_degree = 1"));
  CHECK(has_line(t, "pipeline_parallel_schedule = \"Interleaved1F1B\""));
  CHECK(has_line(t, "pipeline_parallel_microbatch_size = 1"));
  // With a pipeline the local batch is the whole step's: 1 x 192.
  CHECK(has_line(t, "local_batch_size = 192"));
  CHECK(has_line(t, "global_batch_size = 1536"));
  CHECK(has_line(t, "mode = \"full\""));
  // 32 chunks; chunk 0 (rank 0) holds the embedding and layers 0-2, chunk 1
  // (rank 1) layers 3-5, chunk 31 layers 93-95 and the head.
  CHECK(has_line(t, "  [\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\"],"));
  CHECK(has_line(t, "  [\"layers.3\", \"layers.4\", \"layers.5\"],"));
  CHECK(has_line(t, "  [\"layers.93\", \"layers.94\", \"layers.95\", \"norm\", \"output\"]"));
  // The distributed optimizer (ZeRO-1) becomes FSDP without resharding: named.
  REQUIRE(out.warnings.size() == 1);
  CHECK(out.warnings[0].find("ZeRO-1") != std::string::npos);
}

TEST_CASE("GPT-3 175B plan as MindSpore settings and strategies", "[exporters][mindspore]") {
  const auto p = make_plan(ex::testing::gpt3_175b());
  const auto out = run(p, ex::Framework::mindspore);
  const auto& t = out.text;
  CHECK(has_line(t, "    device_num=1024,"));
  CHECK(has_line(t, "    pipeline_stages=16,"));
  CHECK(has_line(t, "    pipeline_config={\"pipeline_interleave\": True, \"pipeline_scheduler\": \"1f1b\"},"));
  CHECK(has_line(t, "    enable_parallel_optimizer=True,"));
  CHECK(has_line(t, "    return nn.PipelineCell(net, micro_size=192)"));
  // Layer 3 is in chunk 1: rank 1, segment 0; layer 48 in chunk 16: rank 0, segment 1.
  CHECK(has_line(t, "    3: (1, 0),"));
  CHECK(has_line(t, "    48: (0, 1),"));
  CHECK(has_line(t, "    \"layers.0/attn/qkv/MatMul\": ((1, 1, 1), (1, 8)),  # matmul tp:n, 96 copies"));
  // A one-tuple keeps its comma in Python.
  CHECK(has_line(t, "    \"embed/positions/Gather\": ((1, 1),),  # embedding replicated"));
  const auto sf = nlohmann::json::parse(out.strategy_file);
  CHECK(sf["format"] == "planner.mindspore-strategy/v1");
  CHECK(sf["device_num"] == 1024);
  CHECK(sf["strategies"].size() == p.layout.strategies.size());
  CHECK(sf["strategies"][0]["strategy"] == nlohmann::json::parse("[[1, 1, 1], [1, 8]]"));
  CHECK(sf["strategies"][0]["instances"].size() == 96);
  // MindSpore's parallel optimizer shards weights as well: named.
  REQUIRE(out.warnings.size() == 1);
  CHECK(out.warnings[0].find("also shards the weights") != std::string::npos);
}

TEST_CASE("op-level sharding beyond Megatron's patterns is named, not dropped", "[exporters][megatron]") {
  PlanSpec spec;
  spec.dp = 2, spec.tp = 4, spec.layers = 2, spec.micro_batches = 2;
  auto p = make_plan(spec);
  // fc1 split along its rows (sequence) by tp, and fc2 split over dp and tp (2-D).
  for (auto& s : p.layout.strategies) {
    if (s.unit == "layers.0/mlp/fc1/MatMul") {
      s.strategy = "((1,4,1),(1,1))";
      s.assignment = "tp:m";
      s.outputs = {"[-,tp,-]"};
    }
    if (s.unit == "layers.0/mlp/fc2/MatMul") {
      s.strategy = "((2,1,4),(4,1))";
      s.assignment = "dp:b tp:k";
    }
  }
  const auto out = run(p, ex::Framework::megatron);
  REQUIRE(out.warnings.size() == 2);
  CHECK(out.warnings[0].find("layers.0/mlp/fc1/MatMul") != std::string::npos);
  CHECK(out.warnings[0].find("rows (m)") != std::string::npos);
  CHECK(out.warnings[0].find("2 copies") != std::string::npos);
  CHECK(out.warnings[1].find("layers.0/mlp/fc2/MatMul") != std::string::npos);
  CHECK(out.warnings[1].find("the dp axis splits letter b") != std::string::npos);
  CHECK(out.text.find("# LOST: op sharding of layers.0/mlp/fc1/MatMul") != std::string::npos);
  // The same plan in MindSpore keeps both strategies exactly.
  const auto ms = run(p, ex::Framework::mindspore);
  CHECK(has_line(ms.text, "    \"layers.0/mlp/fc1/MatMul\": ((1, 4, 1), (1, 1)),  # matmul tp:m, 2 copies"));
  CHECK(has_line(ms.text, "    \"layers.0/mlp/fc2/MatMul\": ((2, 1, 4), (4, 1)),  # matmul dp:b tp:k, 2 copies"));
  CHECK(!any_contains(ms.warnings, "op sharding"));
}

TEST_CASE("beyond_megatron classifies the usual tensor-parallel patterns", "[exporters]") {
  using ex::testing::strategy;
  auto s = [](const char* fam, const char* assign, std::vector<std::string> outs = {"[-,-,tp]"}) {
    return strategy("u", {"u"}, fam, "((1,1))", assign, std::move(outs));
  };
  CHECK(ex::beyond_megatron(s("matmul", "tp:n"), false).empty());
  CHECK(ex::beyond_megatron(s("matmul", "tp:k"), false).empty());
  CHECK(ex::beyond_megatron(s("matmul", ""), false).empty());
  CHECK(!ex::beyond_megatron(s("matmul", "tp:m"), false).empty());
  CHECK(!ex::beyond_megatron(s("matmul", "tp:b"), false).empty());
  CHECK(ex::beyond_megatron(s("attention", "tp:n"), false).empty());
  CHECK(!ex::beyond_megatron(s("attention", "tp:sq"), false).empty());
  CHECK(ex::beyond_megatron(s("embedding", "tp:v"), false).empty());
  CHECK(!ex::beyond_megatron(s("embedding", "tp:h"), false).empty());
  CHECK(ex::beyond_megatron(s("loss", "tp:c"), false).empty());
  CHECK(!ex::beyond_megatron(s("conv", "tp:oc"), false).empty());
  // Norms: sequence split only under sequence parallelism, never the hidden dim.
  CHECK(ex::beyond_megatron(s("norm", "tp:d1", {"[-,tp,-]"}), true).empty());
  CHECK(!ex::beyond_megatron(s("norm", "tp:d1", {"[-,tp,-]"}), false).empty());
  CHECK(!ex::beyond_megatron(s("norm", "tp:d2", {"[-,-,tp]"}), true).empty());
  // Elementwise ops follow the GEMMs, but never split the batch over tp.
  CHECK(ex::beyond_megatron(s("elementwise", "tp:d2", {"[-,-,tp]"}), false).empty());
  CHECK(!ex::beyond_megatron(s("elementwise", "tp:d0", {"[tp,-,-]"}), false).empty());
  CHECK(!ex::beyond_megatron(s("matmul", "dp:m tp:n"), false).empty());
}

TEST_CASE("uneven pipeline cuts: first/last stage sizes where Megatron has them", "[exporters][megatron]") {
  PlanSpec spec;
  spec.dp = 2, spec.pp = 4, spec.layers = 24, spec.micro_batches = 8;
  spec.cut = {5, 6, 6, 7};  // 24 layers: first 5, middle 6 and 6, last 7
  auto p = make_plan(spec);
  const auto v12 = run(p, ex::Framework::megatron);
  CHECK(has_line(v12.text, "  --decoder-first-pipeline-num-layers 5"));
  CHECK(has_line(v12.text, "  --decoder-last-pipeline-num-layers 7"));
  CHECK(v12.warnings.empty());
  const auto v8 = run(p, ex::Framework::megatron, "core_v0.8.0");
  CHECK(v8.text.find("decoder-first") == std::string::npos);
  REQUIRE(v8.warnings.size() == 1);
  CHECK(v8.warnings[0].find("pipeline cut 5,6,6,7") != std::string::npos);
  CHECK(v8.warnings[0].find("no uneven stages") != std::string::npos);
  // Unequal middle ranks: not expressible even on core_v0.12.0.
  spec.cut = {6, 5, 7, 6};
  const auto mid = run(make_plan(spec), ex::Framework::megatron);
  REQUIRE(mid.warnings.size() == 1);
  CHECK(mid.warnings[0].find("pipeline cut 6,5,7,6") != std::string::npos);
  // Two ranks: the first rank's size is enough (the last takes the rest).
  spec.pp = 2, spec.cut = {11, 13}, spec.dp = 4;
  const auto two = run(make_plan(spec), ex::Framework::megatron);
  CHECK(has_line(two.text, "  --decoder-first-pipeline-num-layers 11"));
  CHECK(two.text.find("--decoder-last") == std::string::npos);
  CHECK(two.warnings.empty());
  // Interleaved and uneven with equal chunks per rank: ranks hold 4+4, 6+6:
  // first 8 layers, last 12, and 2 virtual stages per rank.
  PlanSpec il;
  il.dp = 2, il.pp = 2, il.vp = 2, il.layers = 20, il.cut = {4, 6, 4, 6}, il.micro_batches = 4;
  const auto vi = run(make_plan(il), ex::Framework::megatron);
  CHECK(has_line(vi.text, "  --decoder-first-pipeline-num-layers 8"));
  CHECK(has_line(vi.text, "  --num-virtual-stages-per-pipeline-rank 2"));
  CHECK(vi.warnings.empty());
  // torchtitan writes any cut exactly.
  const auto tt = run(make_plan(il), ex::Framework::torchtitan);
  CHECK(has_line(tt.text, "  [\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\", \"layers.3\"],"));
  CHECK(!any_contains(tt.warnings, "cut"));
  // DeepSpeed cannot: PipelineModule has no explicit stage sizes.
  CHECK(any_contains(run(make_plan(spec), ex::Framework::deepspeed).warnings, "pipeline cut 11,13"));
}

TEST_CASE("unknown framework and version are errors", "[exporters]") {
  CHECK(!ex::parse_framework("jax").ok());
  CHECK(ex::parse_framework("torchtitan").ok());
  const auto p = make_plan(PlanSpec{});
  auto bad = ex::export_plan(p, ex::Framework::megatron, {"core_v9", ""});
  REQUIRE(!bad.ok());
  CHECK(bad.error().message == "megatron version 'core_v9' is not supported (known: core_v0.12.0, core_v0.8.0)");
}
