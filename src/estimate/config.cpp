// ParallelConfig: names, validation, summary.

#include "planner/estimate/config.hpp"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace planner::estimate {
namespace {

constexpr std::array<std::pair<Framework, std::string_view>, 6> kFrameworks{{
    {Framework::megatron, "megatron"},
    {Framework::megatron_legacy, "megatron-legacy"},
    {Framework::deepspeed, "deepspeed"},
    {Framework::fsdp, "fsdp"},
    {Framework::ddp, "ddp"},
    {Framework::executor, "executor"},
}};

}  // namespace

std::string_view framework_name(Framework f) {
  for (const auto& [k, n] : kFrameworks)
    if (k == f) return n;
  return "?";
}

bool fuses_elementwise(Framework f) {
  return f == Framework::megatron || f == Framework::megatron_legacy || f == Framework::deepspeed;
}

bool runs_executor_kernels(Framework f) { return f == Framework::executor; }

bool supports_context_parallel(Framework f) { return f == Framework::megatron; }

bool groups_local_experts(Framework f) { return f == Framework::megatron; }

std::optional<std::string> context_parallel_error(std::int64_t seq, int tp, int cp, bool sequence_parallel) {
  if (cp > 1 && seq % cp != 0) return fmt::format("sequence length {} is not divisible by `cp` {}", seq, cp);
  if (sequence_parallel && seq % (static_cast<std::int64_t>(tp) * cp) != 0)
    return fmt::format("sequence length {} is not divisible by tp*cp = {} (`sequence_parallel` splits it)", seq,
                       static_cast<std::int64_t>(tp) * cp);
  return std::nullopt;
}

Result<Framework> parse_framework(std::string_view s) {
  for (const auto& [k, n] : kFrameworks)
    if (n == s) return k;
  return Error{fmt::format("unknown framework '{}' (expected megatron, megatron-legacy, deepspeed, fsdp, ddp or executor)", s)};
}

Result<int> parse_optimizer_state_dtype(std::string_view s) {
  if (s == "fp32") return 4;
  if (s == "bf16") return 2;
  return Error{fmt::format("unknown optimizer state dtype '{}' (expected fp32 or bf16)", s)};
}

std::string_view optimizer_state_dtype_name(int bytes) { return bytes == 2 ? "bf16" : "fp32"; }

Result<cost::MasterWeights> parse_master_weights(std::string_view s) {
  for (auto m : {cost::MasterWeights::fp32, cost::MasterWeights::remainder, cost::MasterWeights::none})
    if (cost::master_weights_name(m) == s) return m;
  return Error{fmt::format("unknown master weights '{}' (expected fp32, remainder or none)", s)};
}

cost::StateSharding ParallelConfig::state_sharding() const {
  if (zero >= 3) return cost::StateSharding::zero3;
  if (zero == 2) return cost::StateSharding::zero2;
  if (distributed_optimizer) return cost::StateSharding::distributed_optimizer;
  if (zero == 1) return cost::StateSharding::zero1;
  return cost::StateSharding::none;
}

Status validate(const ParallelConfig& c) {
  const std::array<std::pair<const char*, int>, 6> degrees{
      {{"dp", c.dp}, {"tp", c.tp}, {"pp", c.pp}, {"cp", c.cp}, {"ep", c.ep}, {"vp", c.vp}}};
  for (const auto& [name, v] : degrees)
    if (v < 1) return make_error("`{}` must be at least 1 (got {})", name, v);
  const long long product = 1LL * c.dp * c.tp * c.pp * c.cp;
  if (product > kMaxDevices)
    return make_error("dp*tp*pp*cp = {}*{}*{}*{} = {} devices is above the planner's limit of {} devices", c.dp, c.tp,
                      c.pp, c.cp, product, kMaxDevices);
  if ((c.dp * c.cp) % c.ep != 0)
    return make_error("`ep` {} must divide dp*cp = {} (experts are split over data/context ranks)", c.ep, c.dp * c.cp);
  if (c.micro_batch < 1) return make_error("`micro_batch` must be at least 1 (got {})", c.micro_batch);
  if (c.global_batch < 1) return make_error("`global_batch` must be at least 1 (got {})", c.global_batch);
  const long long per_step = 1LL * c.micro_batch * c.dp;
  if (c.global_batch % per_step != 0)
    return make_error("`global_batch` {} is not divisible by micro-batch * dp = {} * {} = {}", c.global_batch,
                      c.micro_batch, c.dp, per_step);
  if (c.micro_batches() > kMaxMicroBatches)
    return make_error("`global_batch` {} / (micro-batch * dp = {}) = {} micro-batches per step is above the "
                      "planner's limit of {}",
                      c.global_batch, per_step, c.micro_batches(), kMaxMicroBatches);
  if (c.devices_per_node < 1)
    return make_error("`devices_per_node` must be at least 1 (got {})", c.devices_per_node);
  if (c.zero < 0 || c.zero > 3) return make_error("`zero` must be 0, 1, 2 or 3 (got {})", c.zero);
  if (c.distributed_optimizer && c.zero >= 2)
    return make_error("`distributed_optimizer` is ZeRO-1 sharding; it cannot be combined with `zero` 2 or 3");
  if (c.schedule == sim::Schedule::interleaved) {
    if (c.vp < 2) return make_error("`schedule` interleaved needs `vp` of at least 2 virtual stages");
    if (c.pp < 2) return make_error("`schedule` interleaved needs `pp` of at least 2");
    if (c.micro_batches() % c.pp != 0)
      return make_error("interleaved schedule: micro-batches per step ({}) must be a multiple of `pp` {}",
                        c.micro_batches(), c.pp);
  } else if (c.vp != 1) {
    return make_error("`vp` {} needs `schedule` interleaved", c.vp);
  }
  if (c.grad_reduce_bytes != 0 && c.grad_reduce_bytes != 2 && c.grad_reduce_bytes != 4)
    return make_error("`grad_reduce_bytes` must be 2 or 4 (got {})", c.grad_reduce_bytes);
  if (c.optimizer_state_bytes != 2 && c.optimizer_state_bytes != 4)
    return make_error("optimizer state bytes must be 2 (bf16) or 4 (fp32) (got {})", c.optimizer_state_bytes);
  if (c.sequence_parallel && c.tp < 2)
    return make_error("`sequence_parallel` (sequence parallelism) needs `tp` of at least 2");
  return {};
}

std::string describe(const ParallelConfig& c) {
  std::string s = fmt::format("dp={} tp={} pp={}", c.dp, c.tp, c.pp);
  if (c.cp > 1) s += fmt::format(" cp={}", c.cp);
  if (c.ep > 1) s += fmt::format(" ep={}", c.ep);
  if (c.vp > 1) s += fmt::format(" vp={}", c.vp);
  if (c.sequence_parallel) s += " sp";
  if (c.tp_splits_batch) s += " tp-any";
  if (!c.layers_per_chunk.empty()) {
    s += " layers=";
    for (std::size_t i = 0; i < c.layers_per_chunk.size(); ++i) s += fmt::format("{}{}", i ? "+" : "", c.layers_per_chunk[i]);
  } else if (c.split_embedding_loss && c.pp * c.vp > 1) {
    s += " split-embedding-loss";
  } else if (c.balance_stages && c.pp > 1 && c.vp == 1) {
    s += " balanced-stages";
  }
  s += fmt::format(" micro-batch={} global-batch={} ({} micro-batches) {}", c.micro_batch, c.global_batch,
                   c.micro_batches(), sim::schedule_name(c.schedule));
  s += fmt::format(" {}", cost::sharding_name(c.state_sharding()));
  return s;
}

}  // namespace planner::estimate
