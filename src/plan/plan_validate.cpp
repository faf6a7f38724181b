// The plan's internal consistency (docs/plan-format.md, "Consistency
// rules"). Each error is one line "<json path>: <problem>"; from_json puts
// the source in front.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "internal.hpp"

namespace planner::plan {
namespace {

using detail::one_line;

Error fail(std::string_view path, std::string_view msg) {
  return Error{one_line(fmt::format("{}: {}", path, msg))};
}

template <std::size_t N>
Status one_of(const std::string& path, const std::string& v, const std::array<std::string_view, N>& names) {
  for (auto n : names)
    if (v == n) return {};
  std::string list;
  for (auto n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  return fail(path, fmt::format("'{}' is not one of: {}", v, list));
}

Status at_least(const std::string& path, std::int64_t v, std::int64_t min) {
  if (v < min) return fail(path, fmt::format("must be >= {}, got {}", min, v));
  return {};
}

Status finite(const std::string& path, double v) {
  if (!std::isfinite(v)) return fail(path, fmt::format("must be a finite number, got {}", v));
  return {};
}

Status non_negative(const std::string& path, double v) {
  PLANNER_TRY_STATUS(finite(path, v));
  if (v < 0) return fail(path, fmt::format("must be >= 0, got {}", v));
  return {};
}

/// [0, 1): betas and momentum.
Status fraction(const std::string& path, double v) {
  PLANNER_TRY_STATUS(finite(path, v));
  if (v < 0 || v >= 1) return fail(path, fmt::format("must be in [0, 1), got {}", v));
  return {};
}

Status non_empty(const std::string& path, const std::string& v) {
  if (v.empty()) return fail(path, "must not be empty");
  return {};
}

/// Exactly `digits` lowercase hex digits, or empty.
Status hex_or_empty(const std::string& path, const std::string& v, std::size_t digits) {
  if (v.empty()) return {};
  bool ok = v.size() == digits;
  for (char c : v) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!ok) return fail(path, fmt::format("expected {} lowercase hex digits or \"\", got \"{}\"", digits, v));
  return {};
}

Status check_producer(const Producer& p) {
  PLANNER_TRY_STATUS(non_empty("producer.tool", p.tool));
  PLANNER_TRY_STATUS(one_of("producer.command", p.command, detail::kCommands));
  PLANNER_TRY_STATUS(non_negative("producer.search_time_s", p.search_time_s));
  return at_least("producer.layouts_scored", p.layouts_scored, 0);
}

Status check_model(const ModelIdentity& m) {
  PLANNER_TRY_STATUS(non_empty("model.path", m.path));
  PLANNER_TRY_STATUS(hex_or_empty("model.sha256", m.sha256, 64));
  PLANNER_TRY_STATUS(at_least("model.parameters", m.parameters, 0));
  for (const auto& [name, v] : m.dims) {
    if (name.empty()) return fail("model.dims", "a dimension name is empty");
    PLANNER_TRY_STATUS(at_least("model.dims." + name, v, 1));
  }
  if (m.batch) PLANNER_TRY_STATUS(at_least("model.batch", *m.batch, 1));
  for (std::size_t i = 0; i < m.params_from_inputs.size(); ++i)
    PLANNER_TRY_STATUS(non_empty(fmt::format("model.params_from_inputs[{}]", i), m.params_from_inputs[i]));
  if (m.shared_weights)
    for (std::size_t i = 0; i < m.shared_weights->size(); ++i)
      PLANNER_TRY_STATUS(non_empty(fmt::format("model.shared_weights[{}]", i), (*m.shared_weights)[i]));
  return {};
}

Status check_cluster(const Cluster& c) {
  PLANNER_TRY_STATUS(non_empty("cluster.profile", c.profile));
  PLANNER_TRY_STATUS(hex_or_empty("cluster.profile_hash", c.profile_hash, 16));
  PLANNER_TRY_STATUS(at_least("cluster.devices", c.devices, 1));
  return at_least("cluster.devices_per_node", c.devices_per_node, 1);
}

/// training.recompute_modules: "" or the canonical list of a selective
/// recompute beyond core_attn alone (known names, in order, once each).
Status check_recompute_modules(const Training& t) {
  if (t.recompute_modules.empty()) return {};
  const char* field = "training.recompute_modules";
  if (t.recompute != "selective")
    return make_error("{}: set with training.recompute '{}' (modules are what selective recompute recomputes)", field,
                      t.recompute);
  std::size_t next = 0;
  for (std::string_view rest = t.recompute_modules;;) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const auto* at = std::find(detail::kRecomputeModules.begin(), detail::kRecomputeModules.end(), item);
    if (at == detail::kRecomputeModules.end())
      return make_error("{}: '{}' is not one of core_attn, layernorm, moe_act", field, item);
    const auto index = static_cast<std::size_t>(at - detail::kRecomputeModules.begin());
    if (index < next)
      return make_error("{}: '{}' is out of order or repeated (canonical order: core_attn,layernorm,moe_act)", field,
                        t.recompute_modules);
    next = index + 1;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (t.recompute_modules == "core_attn")
    return make_error("{}: 'core_attn' alone is the default, written as no field", field);
  return {};
}

Status check_training(const Training& t, const Layout& l) {
  PLANNER_TRY_STATUS(at_least("training.global_batch", t.global_batch, 1));
  PLANNER_TRY_STATUS(at_least("training.micro_batch", t.micro_batch, 1));
  PLANNER_TRY_STATUS(at_least("training.micro_batches", t.micro_batches, 1));
  // Overflow-safe: micro_batch * dp fits easily; compare by division.
  const std::int64_t per_micro = static_cast<std::int64_t>(t.micro_batch) * l.dp;
  if (t.global_batch % per_micro != 0 || t.global_batch / per_micro != t.micro_batches)
    return fail("training.global_batch",
                fmt::format("{} != micro_batch * dp * micro_batches = {} * {} * {}", t.global_batch, t.micro_batch,
                            l.dp, t.micro_batches));
  const auto& o = t.optimizer;
  PLANNER_TRY_STATUS(one_of("training.optimizer.name", o.name, detail::kOptimizers));
  PLANNER_TRY_STATUS(non_negative("training.optimizer.learning_rate", o.learning_rate));
  PLANNER_TRY_STATUS(fraction("training.optimizer.beta1", o.beta1));
  PLANNER_TRY_STATUS(fraction("training.optimizer.beta2", o.beta2));
  PLANNER_TRY_STATUS(non_negative("training.optimizer.epsilon", o.epsilon));
  PLANNER_TRY_STATUS(non_negative("training.optimizer.weight_decay", o.weight_decay));
  PLANNER_TRY_STATUS(fraction("training.optimizer.momentum", o.momentum));
  PLANNER_TRY_STATUS(one_of("training.optimizer.state_dtype", o.state_dtype, detail::kStateDtypes));
  PLANNER_TRY_STATUS(one_of("training.optimizer.master_weights", o.master_weights, detail::kMasterWeights));
  PLANNER_TRY_STATUS(one_of("training.precision", t.precision, detail::kPrecisions));
  for (const auto& [cls, prec] : t.precision_by_class) {
    if (cls.empty()) return fail("training.precision_by_class", "an op class name is empty");
    PLANNER_TRY_STATUS(one_of("training.precision_by_class." + cls, prec, detail::kPrecisions));
  }
  PLANNER_TRY_STATUS(one_of("training.recompute", t.recompute, detail::kRecompute));
  PLANNER_TRY_STATUS(check_recompute_modules(t));
  PLANNER_TRY_STATUS(one_of("training.attention", t.attention, detail::kAttention));
  PLANNER_TRY_STATUS(one_of("training.memory_format", t.memory_format, detail::kMemoryFormat));
  if (t.grad_reduce_bytes != 0 && t.grad_reduce_bytes != 2 && t.grad_reduce_bytes != 4)
    return make_error("training.grad_reduce_bytes: expected 0, 2 or 4 (got {})", t.grad_reduce_bytes);
  return one_of("training.framework", t.framework, detail::kFrameworks);
}

/// Degrees, flags and the mesh.
Status check_degrees(const Layout& l, const Cluster& c, const Training& t) {
  const std::array<std::pair<const char*, int>, 6> degrees{
      {{"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp}, {"ep", l.ep}, {"vp", l.vp}}};
  for (const auto& [name, v] : degrees) PLANNER_TRY_STATUS(at_least(fmt::format("layout.{}", name), v, 1));
  // long double: exact for any product of four ints that could equal devices.
  const long double product = static_cast<long double>(l.dp) * l.tp * l.pp * l.cp;
  if (product != c.devices)
    return fail("layout", fmt::format("dp*tp*pp*cp = {}*{}*{}*{} = {} but cluster.devices is {}", l.dp, l.tp, l.pp,
                                      l.cp, static_cast<double>(product), c.devices));
  if ((std::int64_t{l.dp} * l.cp) % l.ep != 0)
    return fail("layout.ep", fmt::format("{} must divide dp*cp = {} (experts are split over data/context ranks)",
                                         l.ep, std::int64_t{l.dp} * l.cp));
  if (l.zero < 0 || l.zero > 3) return fail("layout.zero", fmt::format("must be 0, 1, 2 or 3, got {}", l.zero));
  if (l.distributed_optimizer && l.zero >= 2)
    return fail("layout.distributed_optimizer", "is ZeRO-1 sharding; it cannot be combined with zero 2 or 3");
  if (l.sequence_parallel && l.tp < 2) return fail("layout.sequence_parallel", "needs tp >= 2");
  PLANNER_TRY_STATUS(one_of("layout.schedule", l.schedule, detail::kSchedules));
  if (l.schedule == "interleaved") {
    if (l.vp < 2) return fail("layout.vp", "the interleaved schedule needs vp >= 2");
    if (l.pp < 2) return fail("layout.pp", "the interleaved schedule needs pp >= 2");
    if (t.micro_batches % l.pp != 0)
      return fail("training.micro_batches",
                  fmt::format("{} must be a multiple of pp = {} for the interleaved schedule", t.micro_batches, l.pp));
  } else if (l.vp != 1) {
    return fail("layout.vp", fmt::format("{} needs schedule 'interleaved' (got '{}')", l.vp, l.schedule));
  }

  std::set<std::string> names;
  std::int64_t stride = 1;
  for (std::size_t k = l.mesh.size(); k-- > 0;) {  // innermost (fastest) last
    const auto& a = l.mesh[k];
    const auto p = fmt::format("layout.mesh[{}]", k);
    PLANNER_TRY_STATUS(one_of(p + ".name", a.name, detail::kMeshAxes));
    if (!names.insert(a.name).second) return fail(p + ".name", fmt::format("axis '{}' appears twice", a.name));
    const int degree = a.name == "pp" ? l.pp : a.name == "dp" ? l.dp : a.name == "cp" ? l.cp : l.tp;
    if (a.size != degree)
      return fail(p + ".size", fmt::format("{} but layout.{} is {}", a.size, a.name, degree));
    if (a.stride != stride)
      return fail(p + ".stride",
                  fmt::format("expected {} (row-major: the last axis is fastest), got {}", stride, a.stride));
    stride *= a.size;
  }
  if (stride != c.devices)
    return fail("layout.mesh", fmt::format("axis sizes multiply to {} but cluster.devices is {}", stride, c.devices));
  return {};
}

/// Chunks; fills `owner` with op name -> chunk index.
Status check_chunks(const Layout& l, std::map<std::string, int>& owner) {
  const std::int64_t expected = std::int64_t{l.pp} * l.vp;
  if (static_cast<std::int64_t>(l.chunks.size()) != expected)
    return fail("layout.chunks", fmt::format("{} chunks, expected pp*vp = {}*{} = {}", l.chunks.size(), l.pp, l.vp,
                                             expected));
  for (std::size_t i = 0; i < l.chunks.size(); ++i) {
    const auto& c = l.chunks[i];
    const auto p = fmt::format("layout.chunks[{}]", i);
    if (c.index != static_cast<int>(i)) return fail(p + ".index", fmt::format("expected {}, got {}", i, c.index));
    const int rank = static_cast<int>(i) % l.pp;
    if (c.pipeline_rank != rank)
      return fail(p + ".pipeline_rank", fmt::format("expected {} (index mod pp), got {}", rank, c.pipeline_rank));
    if (!c.devices.empty()) {
      const auto want = stage_devices(l, rank);
      if (c.devices.size() != want.size())
        return fail(p + ".devices", fmt::format("{} ranks, expected devices/pp = {} (pipeline rank {} of the mesh)",
                                                c.devices.size(), want.size(), rank));
      for (std::size_t k = 0; k < want.size(); ++k)
        if (c.devices[k] != want[k])
          return fail(fmt::format("{}.devices[{}]", p, k),
                      fmt::format("expected rank {} (pipeline rank {}'s ranks in the mesh's rank order), got {}",
                                  want[k], rank, c.devices[k]));
    }
    PLANNER_TRY_STATUS(at_least(p + ".first_layer", c.first_layer, 0));
    PLANNER_TRY_STATUS(at_least(p + ".last_layer", c.last_layer, -1));
    for (std::size_t k = 0; k < c.ops.size(); ++k) {
      const auto op = fmt::format("{}.ops[{}]", p, k);
      PLANNER_TRY_STATUS(non_empty(op, c.ops[k]));
      auto [it, inserted] = owner.emplace(c.ops[k], static_cast<int>(i));
      if (!inserted)
        return fail(op, fmt::format("op '{}' is already in layout.chunks[{}] (every op is in exactly one chunk)",
                                    c.ops[k], it->second));
    }
  }
  return {};
}

/// Each rank's program: every (micro-batch, chunk on the rank) forward and
/// backward exactly once, the backward after its forward, nothing else.
Status check_schedule(const Layout& l, std::int64_t micro_batches) {
  if (static_cast<std::int64_t>(l.schedule_steps.size()) != l.pp)
    return fail("layout.schedule_steps", fmt::format("{} programs, expected one per pipeline rank (pp = {})",
                                                     l.schedule_steps.size(), l.pp));
  if (micro_batches > std::numeric_limits<int>::max())
    return fail("training.micro_batches", fmt::format("{} is too large for a schedule", micro_batches));
  const int chunks = static_cast<int>(l.chunks.size());  // = pp * vp, checked
  for (int r = 0; r < l.pp; ++r) {
    const auto& program = l.schedule_steps[static_cast<std::size_t>(r)];
    const auto p = fmt::format("layout.schedule_steps[{}]", r);
    std::set<std::tuple<char, int, int>> seen;
    for (std::size_t i = 0; i < program.size(); ++i) {
      const auto& s = program[i];
      const auto sp = fmt::format("{}[{}]", p, i);
      if (s.kind != 'F' && s.kind != 'B')
        return fail(sp, fmt::format("step kind '{}' is not F or B", one_line(std::string(1, s.kind))));
      const auto text = detail::step_text(s);
      if (s.micro_batch < 0 || s.micro_batch >= micro_batches)
        return fail(sp, fmt::format("{}: micro-batch {} is not in [0, {})", text, s.micro_batch, micro_batches));
      if (s.chunk < 0 || s.chunk >= chunks)
        return fail(sp, fmt::format("{}: chunk {} does not exist (pp*vp = {})", text, s.chunk, chunks));
      if (s.chunk % l.pp != r)
        return fail(sp, fmt::format("{}: chunk {} runs on pipeline rank {}, not {}", text, s.chunk, s.chunk % l.pp, r));
      if (!seen.insert({s.kind, s.micro_batch, s.chunk}).second)
        return fail(sp, fmt::format("{} appears twice", text));
      if (s.kind == 'B' && !seen.count({'F', s.micro_batch, s.chunk}))
        return fail(sp, fmt::format("{} comes before its forward", text));
    }
    // All steps are valid and distinct, so a missing one exists among the
    // first program.size() + 1 candidates when the count is short.
    const std::int64_t expected = 2 * micro_batches * l.vp;
    if (static_cast<std::int64_t>(program.size()) != expected) {
      for (std::int64_t mb = 0; mb < micro_batches; ++mb)
        for (int c = r; c < chunks; c += l.pp)
          for (char kind : {'F', 'B'})
            if (!seen.count({kind, static_cast<int>(mb), c}))
              return fail(p, fmt::format("missing {}{}@c{} (each micro-batch runs forward and backward of every "
                                         "chunk on the rank once)",
                                         kind, mb, c));
    }
  }
  return {};
}

Status check_strategies(const Layout& l, const std::map<std::string, int>& owner) {
  std::set<std::string> units;
  const auto known = [&](const std::string& path, const std::string& op) -> Status {
    PLANNER_TRY_STATUS(non_empty(path, op));
    if (!owner.count(op)) return fail(path, fmt::format("'{}' is not an op of any chunk (layout.chunks[].ops)", op));
    return {};
  };
  for (std::size_t i = 0; i < l.strategies.size(); ++i) {
    const auto& s = l.strategies[i];
    const auto p = fmt::format("layout.strategies[{}]", i);
    PLANNER_TRY_STATUS(non_empty(p + ".unit", s.unit));
    if (!units.insert(s.unit).second) return fail(p + ".unit", fmt::format("unit '{}' appears twice", s.unit));
    if (s.instances.empty()) return fail(p + ".instances", "must list at least one instance (copy 0 first)");
    for (std::size_t k = 0; k < s.instances.size(); ++k)
      PLANNER_TRY_STATUS(known(fmt::format("{}.instances[{}]", p, k), s.instances[k]));
    if (s.ops.empty()) return fail(p + ".ops", "must list at least one op");
    for (std::size_t k = 0; k < s.ops.size(); ++k) PLANNER_TRY_STATUS(known(fmt::format("{}.ops[{}]", p, k), s.ops[k]));
    for (std::size_t k = 0; k < s.collectives.size(); ++k) {
      const auto& c = s.collectives[k];
      const auto cp = fmt::format("{}.collectives[{}]", p, k);
      PLANNER_TRY_STATUS(one_of(cp + ".kind", c.kind, detail::kCollectives));
      PLANNER_TRY_STATUS(non_empty(cp + ".axis", c.axis));
      PLANNER_TRY_STATUS(at_least(cp + ".group_size", c.group_size, 1));
      PLANNER_TRY_STATUS(non_negative(cp + ".bytes", c.bytes));
      PLANNER_TRY_STATUS(at_least(cp + ".count", c.count, 1));
    }
  }
  return {};
}

Status check_prediction(const Prediction& p, const Layout& l) {
  PLANNER_TRY_STATUS(non_negative("prediction.step_time_s", p.step_time_s));
  for (const auto& [k, v] : p.breakdown_s) {
    if (k.empty()) return fail("prediction.breakdown_s", "an entry name is empty");
    PLANNER_TRY_STATUS(non_negative("prediction.breakdown_s." + k, v));
  }
  PLANNER_TRY_STATUS(non_negative("prediction.model_tflops_per_device", p.model_tflops_per_device));
  PLANNER_TRY_STATUS(non_negative("prediction.hardware_tflops_per_device", p.hardware_tflops_per_device));
  PLANNER_TRY_STATUS(non_negative("prediction.mfu", p.mfu));
  PLANNER_TRY_STATUS(non_negative("prediction.hfu", p.hfu));
  PLANNER_TRY_STATUS(non_negative("prediction.capacity_bytes", p.capacity_bytes));
  std::set<int> stages;
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const auto& s = p.stages[i];
    const auto sp = fmt::format("prediction.stages[{}]", i);
    if (s.stage < 0 || s.stage >= l.pp)
      return fail(sp + ".stage", fmt::format("{} is not a pipeline rank in [0, {})", s.stage, l.pp));
    if (!stages.insert(s.stage).second) return fail(sp + ".stage", fmt::format("stage {} appears twice", s.stage));
    PLANNER_TRY_STATUS(non_negative(sp + ".peak_bytes", s.peak_bytes));
    PLANNER_TRY_STATUS(non_negative(sp + ".parameters", s.parameters));
    PLANNER_TRY_STATUS(non_negative(sp + ".micro_batches_in_flight", s.micro_batches_in_flight));
    for (std::size_t k = 0; k < s.items.size(); ++k) {
      const auto ip = fmt::format("{}.items[{}]", sp, k);
      PLANNER_TRY_STATUS(non_empty(ip + ".kind", s.items[k].kind));
      PLANNER_TRY_STATUS(non_negative(ip + ".bytes", s.items[k].bytes));
    }
  }
  PLANNER_TRY_STATUS(non_negative("prediction.lower_bound_s", p.lower_bound_s));
  PLANNER_TRY_STATUS(finite("prediction.gap", p.gap));
  for (std::size_t i = 0; i < p.alternatives.size(); ++i) {
    const auto ap = fmt::format("prediction.alternatives[{}]", i);
    PLANNER_TRY_STATUS(non_empty(ap + ".layout", p.alternatives[i].layout));
    PLANNER_TRY_STATUS(non_negative(ap + ".step_time_s", p.alternatives[i].step_time_s));
  }
  return {};
}

/// prediction.timeline: ranks in [0, pp) at most once, known streams and
/// kinds, indices in range, 0 <= start <= end <= step_time_s.
Status check_timeline(const Prediction& p, const Layout& l, std::int64_t micro_batches) {
  std::set<int> seen;
  const auto chunks = static_cast<int>(static_cast<std::int64_t>(l.pp) * l.vp);
  for (std::size_t i = 0; i < p.timeline.size(); ++i) {
    const auto& st = p.timeline[i];
    const auto tp = fmt::format("prediction.timeline[{}]", i);
    if (st.stage < 0 || st.stage >= l.pp)
      return fail(tp + ".stage", fmt::format("{} is not a pipeline rank in [0, {})", st.stage, l.pp));
    if (!seen.insert(st.stage).second) return fail(tp + ".stage", fmt::format("stage {} appears twice", st.stage));
    for (std::size_t k = 0; k < st.spans.size(); ++k) {
      const auto& s = st.spans[k];
      const auto sp = fmt::format("{}.spans[{}]", tp, k);
      PLANNER_TRY_STATUS(one_of(sp + ".stream", s.stream, detail::kStreams));
      PLANNER_TRY_STATUS(one_of(sp + ".kind", s.kind, detail::kSpanKinds));
      if (s.micro_batch && (*s.micro_batch < 0 || *s.micro_batch >= micro_batches))
        return fail(sp + ".micro_batch",
                    fmt::format("{} is not a micro-batch in [0, {})", *s.micro_batch, micro_batches));
      if (s.chunk && (*s.chunk < 0 || *s.chunk >= chunks || *s.chunk % l.pp != st.stage))
        return fail(sp + ".chunk", fmt::format("{} is not a chunk of pipeline rank {} (chunks = {})", *s.chunk,
                                               st.stage, chunks));
      if (s.peer && (*s.peer < 0 || *s.peer >= l.pp))
        return fail(sp + ".peer", fmt::format("{} is not a pipeline rank in [0, {})", *s.peer, l.pp));
      PLANNER_TRY_STATUS(non_negative(sp + ".start_s", s.start_s));
      PLANNER_TRY_STATUS(finite(sp + ".end_s", s.end_s));
      if (s.end_s < s.start_s)
        return fail(sp + ".end_s", fmt::format("{} is before start_s {}", s.end_s, s.start_s));
      if (s.end_s > p.step_time_s)
        return fail(sp + ".end_s", fmt::format("{} is after the step's end (step_time_s {})", s.end_s, p.step_time_s));
    }
  }
  return {};
}

}  // namespace

std::vector<int> stage_devices(const Layout& l, int pipeline_rank) {
  std::int64_t devices = 1, stride = 1, size = 1;
  for (const auto& a : l.mesh) {
    devices *= a.size;
    if (a.name == "pp") {
      stride = a.stride;
      size = a.size;
    }
  }
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(devices / std::max<std::int64_t>(1, size)));
  for (std::int64_t r = 0; r < devices; ++r)
    if ((r / std::max<std::int64_t>(1, stride)) % std::max<std::int64_t>(1, size) == pipeline_rank)
      out.push_back(static_cast<int>(r));
  return out;
}

Status validate(const Plan& p) {
  if (p.format != kFormat) return fail("format", fmt::format("expected '{}', got '{}'", kFormat, p.format));
  PLANNER_TRY_STATUS(check_producer(p.producer));
  PLANNER_TRY_STATUS(check_model(p.model));
  PLANNER_TRY_STATUS(check_cluster(p.cluster));
  // Degrees before the batch arithmetic, which divides by dp.
  PLANNER_TRY_STATUS(check_degrees(p.layout, p.cluster, p.training));
  PLANNER_TRY_STATUS(check_training(p.training, p.layout));
  std::map<std::string, int> owner;
  PLANNER_TRY_STATUS(check_chunks(p.layout, owner));
  PLANNER_TRY_STATUS(check_schedule(p.layout, p.training.micro_batches));
  PLANNER_TRY_STATUS(check_strategies(p.layout, owner));
  PLANNER_TRY_STATUS(check_prediction(p.prediction, p.layout));
  return check_timeline(p.prediction, p.layout, p.training.micro_batches);
}

}  // namespace planner::plan
