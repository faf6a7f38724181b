// JSON text -> Plan, strictly: every field type-checked, unknown and
// duplicate keys rejected, then validate(). Each error is one line,
// "<source>: <json path>: <problem>".

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal.hpp"
#include "planner/core/json_path.hpp"

namespace planner::plan {
namespace {

using nlohmann::json;
using detail::one_line;

std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return fmt::format("a boolean ({})", v.get<bool>());
    case json::value_t::string: {
      auto s = v.get<std::string>();
      if (s.size() > 40) s = s.substr(0, 37) + "...";
      return fmt::format("a string (\"{}\")", s);
    }
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return fmt::format("a number ({})", v.dump());
    default: return "an unsupported value";
  }
}

class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  Error fail(std::string_view path, std::string_view msg) const {
    return Error{one_line(fmt::format("{}: {}: {}", source_, core::describe_json_path(path), msg))};
  }
  Error expected(std::string_view path, std::string_view what, const json& got) const {
    return fail(path, fmt::format("expected {}, got {}", what, describe(got)));
  }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

// --- scalar and container readers: read(r, value, path, out) ---------------

Status read(const Reader& r, const json& v, const std::string& path, std::int64_t& out) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return r.fail(path, fmt::format("integer {} is out of range", v.dump()));
    out = static_cast<std::int64_t>(v.get<std::uint64_t>());
    return {};
  }
  if (!v.is_number_integer()) return r.expected(path, "an integer", v);
  out = v.get<std::int64_t>();
  return {};
}

Status read(const Reader& r, const json& v, const std::string& path, int& out) {
  std::int64_t x = 0;
  PLANNER_TRY_STATUS(read(r, v, path, x));
  if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
    return r.fail(path, fmt::format("integer {} is out of range", x));
  out = static_cast<int>(x);
  return {};
}

Status read(const Reader& r, const json& v, const std::string& path, std::uint64_t& out) {
  if (v.is_number_unsigned()) {
    out = v.get<std::uint64_t>();
    return {};
  }
  if (v.is_number_integer()) return r.fail(path, fmt::format("expected a non-negative integer, got {}", v.dump()));
  return r.expected(path, "a non-negative integer", v);
}

Status read(const Reader& r, const json& v, const std::string& path, double& out) {
  if (!v.is_number()) return r.expected(path, "a number", v);
  out = v.get<double>();
  return {};
}

Status read(const Reader& r, const json& v, const std::string& path, bool& out) {
  if (!v.is_boolean()) return r.expected(path, "true or false", v);
  out = v.get<bool>();
  return {};
}

Status read(const Reader& r, const json& v, const std::string& path, std::string& out) {
  if (!v.is_string()) return r.expected(path, "a string", v);
  out = v.get<std::string>();
  return {};
}

Status read(const Reader& r, const json& v, const std::string& path, ScheduleStep& out) {
  if (!v.is_string()) return r.expected(path, "a step string like \"F3@c1\"", v);
  auto s = detail::parse_step(v.get_ref<const std::string&>());
  if (!s) return r.fail(path, s.error().message);
  out = *s;
  return {};
}

template <typename T>
Status read(const Reader& r, const json& v, const std::string& path, std::vector<T>& out);
template <typename T>
Status read(const Reader& r, const json& v, const std::string& path, std::map<std::string, T>& out);

// --- objects ------------------------------------------------------------------

Status read(const Reader& r, const json& v, const std::string& path, Producer& out);
Status read(const Reader& r, const json& v, const std::string& path, ModelIdentity& out);
Status read(const Reader& r, const json& v, const std::string& path, Cluster& out);
Status read(const Reader& r, const json& v, const std::string& path, OptimizerSettings& out);
Status read(const Reader& r, const json& v, const std::string& path, Training& out);
Status read(const Reader& r, const json& v, const std::string& path, MeshAxis& out);
Status read(const Reader& r, const json& v, const std::string& path, Chunk& out);
Status read(const Reader& r, const json& v, const std::string& path, Collective& out);
Status read(const Reader& r, const json& v, const std::string& path, OpStrategy& out);
Status read(const Reader& r, const json& v, const std::string& path, Layout& out);
Status read(const Reader& r, const json& v, const std::string& path, MemoryItem& out);
Status read(const Reader& r, const json& v, const std::string& path, StageMemory& out);
Status read(const Reader& r, const json& v, const std::string& path, Alternative& out);
Status read(const Reader& r, const json& v, const std::string& path, Prediction& out);
Status read(const Reader& r, const json& v, const std::string& path, TimelineSpan& out);
Status read(const Reader& r, const json& v, const std::string& path, StageTimeline& out);

/// One JSON object being read: unknown keys are checked up front, then
/// fields are read required or optional.
class Obj {
 public:
  Obj(const Reader& r, const json& j, std::string path) : r_(r), j_(j), path_(std::move(path)) {}

  /// The value is an object whose keys are all in `allowed`.
  Status check(std::initializer_list<std::string_view> allowed) const {
    if (!j_.is_object()) return r_.expected(path_, "an object", j_);
    for (const auto& [key, value] : j_.items()) {
      bool ok = false;
      for (auto a : allowed) ok = ok || key == a;
      if (!ok) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return r_.fail(path_, fmt::format("unknown key '{}' (expected one of: {})", key, list));
      }
    }
    return {};
  }

  template <typename T>
  Status req(std::string_view key, T& out) const {
    auto it = j_.find(std::string(key));
    if (it == j_.end()) return r_.fail(core::json_path(path_, key), "missing required field");
    return read(r_, *it, core::json_path(path_, key), out);
  }

  /// Absent: `out` keeps its default.
  template <typename T>
  Status opt(std::string_view key, T& out) const {
    auto it = j_.find(std::string(key));
    if (it == j_.end()) return {};
    return read(r_, *it, core::json_path(path_, key), out);
  }

  template <typename T>
  Status opt(std::string_view key, std::optional<T>& out) const {
    auto it = j_.find(std::string(key));
    if (it == j_.end()) return {};
    T v{};
    PLANNER_TRY_STATUS(read(r_, *it, core::json_path(path_, key), v));
    out = v;
    return {};
  }

 private:
  const Reader& r_;
  const json& j_;
  std::string path_;
};

Status read(const Reader& r, const json& v, const std::string& path, Producer& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"tool", "version", "command", "search_time_s", "layouts_scored"}));
  PLANNER_TRY_STATUS(o.req("tool", out.tool));
  PLANNER_TRY_STATUS(o.req("version", out.version));
  PLANNER_TRY_STATUS(o.req("command", out.command));
  PLANNER_TRY_STATUS(o.opt("search_time_s", out.search_time_s));
  return o.opt("layouts_scored", out.layouts_scored);
}

Status read(const Reader& r, const json& v, const std::string& path, ModelIdentity& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"path", "sha256", "parameters", "dims", "batch", "params_from_inputs"}));
  PLANNER_TRY_STATUS(o.req("path", out.path));
  PLANNER_TRY_STATUS(o.req("sha256", out.sha256));
  PLANNER_TRY_STATUS(o.req("parameters", out.parameters));
  PLANNER_TRY_STATUS(o.opt("dims", out.dims));
  PLANNER_TRY_STATUS(o.opt("batch", out.batch));
  return o.opt("params_from_inputs", out.params_from_inputs);
}

Status read(const Reader& r, const json& v, const std::string& path, Cluster& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"profile", "profile_hash", "devices", "devices_per_node", "overrides"}));
  PLANNER_TRY_STATUS(o.req("profile", out.profile));
  PLANNER_TRY_STATUS(o.req("profile_hash", out.profile_hash));
  PLANNER_TRY_STATUS(o.req("devices", out.devices));
  PLANNER_TRY_STATUS(o.req("devices_per_node", out.devices_per_node));
  return o.opt("overrides", out.overrides);
}

Status read(const Reader& r, const json& v, const std::string& path, OptimizerSettings& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(
      o.check({"name", "learning_rate", "beta1", "beta2", "epsilon", "weight_decay", "momentum", "state_dtype",
               "master_weights"}));
  PLANNER_TRY_STATUS(o.req("name", out.name));
  PLANNER_TRY_STATUS(o.req("learning_rate", out.learning_rate));
  PLANNER_TRY_STATUS(o.req("beta1", out.beta1));
  PLANNER_TRY_STATUS(o.req("beta2", out.beta2));
  PLANNER_TRY_STATUS(o.req("epsilon", out.epsilon));
  PLANNER_TRY_STATUS(o.req("weight_decay", out.weight_decay));
  PLANNER_TRY_STATUS(o.req("momentum", out.momentum));
  PLANNER_TRY_STATUS(o.opt("state_dtype", out.state_dtype));
  return o.opt("master_weights", out.master_weights);
}

Status read(const Reader& r, const json& v, const std::string& path, Training& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"global_batch", "micro_batch", "micro_batches", "optimizer", "precision",
                              "precision_by_class", "recompute", "attention", "framework", "seed",
                              "fused_loss", "grad_reduce_bytes", "memory_format"}));
  PLANNER_TRY_STATUS(o.req("global_batch", out.global_batch));
  PLANNER_TRY_STATUS(o.req("micro_batch", out.micro_batch));
  PLANNER_TRY_STATUS(o.req("micro_batches", out.micro_batches));
  PLANNER_TRY_STATUS(o.req("optimizer", out.optimizer));
  PLANNER_TRY_STATUS(o.req("precision", out.precision));
  PLANNER_TRY_STATUS(o.opt("precision_by_class", out.precision_by_class));
  PLANNER_TRY_STATUS(o.req("recompute", out.recompute));
  PLANNER_TRY_STATUS(o.req("attention", out.attention));
  PLANNER_TRY_STATUS(o.req("framework", out.framework));
  PLANNER_TRY_STATUS(o.req("seed", out.seed));
  PLANNER_TRY_STATUS(o.opt("fused_loss", out.fused_loss));
  PLANNER_TRY_STATUS(o.opt("grad_reduce_bytes", out.grad_reduce_bytes));
  return o.opt("memory_format", out.memory_format);
}

Status read(const Reader& r, const json& v, const std::string& path, MeshAxis& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"name", "size", "stride"}));
  PLANNER_TRY_STATUS(o.req("name", out.name));
  PLANNER_TRY_STATUS(o.req("size", out.size));
  return o.req("stride", out.stride);
}

Status read(const Reader& r, const json& v, const std::string& path, Chunk& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(
      o.check({"index", "pipeline_rank", "devices", "first_layer", "last_layer", "embedding", "head", "ops"}));
  PLANNER_TRY_STATUS(o.req("index", out.index));
  PLANNER_TRY_STATUS(o.req("pipeline_rank", out.pipeline_rank));
  std::optional<std::vector<int>> devices;  // optional: plans before it (filled from the mesh)
  PLANNER_TRY_STATUS(o.opt("devices", devices));
  if (devices && devices->empty())
    return r.fail(core::json_path(path, "devices"), "is empty (list the stage's ranks, or leave the field out)");
  if (devices) out.devices = std::move(*devices);
  PLANNER_TRY_STATUS(o.req("first_layer", out.first_layer));
  PLANNER_TRY_STATUS(o.req("last_layer", out.last_layer));
  PLANNER_TRY_STATUS(o.req("embedding", out.embedding));
  PLANNER_TRY_STATUS(o.req("head", out.head));
  return o.req("ops", out.ops);
}

Status read(const Reader& r, const json& v, const std::string& path, Collective& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"kind", "axis", "group_size", "bytes", "count", "backward", "per_step", "where"}));
  PLANNER_TRY_STATUS(o.req("kind", out.kind));
  PLANNER_TRY_STATUS(o.req("axis", out.axis));
  PLANNER_TRY_STATUS(o.req("group_size", out.group_size));
  PLANNER_TRY_STATUS(o.req("bytes", out.bytes));
  PLANNER_TRY_STATUS(o.req("count", out.count));
  PLANNER_TRY_STATUS(o.req("backward", out.backward));
  PLANNER_TRY_STATUS(o.req("per_step", out.per_step));
  return o.opt("where", out.where);
}

Status read(const Reader& r, const json& v, const std::string& path, OpStrategy& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check(
      {"unit", "instances", "ops", "family", "strategy", "assignment", "inputs", "outputs", "collectives"}));
  PLANNER_TRY_STATUS(o.req("unit", out.unit));
  PLANNER_TRY_STATUS(o.req("instances", out.instances));
  PLANNER_TRY_STATUS(o.req("ops", out.ops));
  PLANNER_TRY_STATUS(o.req("family", out.family));
  PLANNER_TRY_STATUS(o.req("strategy", out.strategy));
  PLANNER_TRY_STATUS(o.req("assignment", out.assignment));
  PLANNER_TRY_STATUS(o.req("inputs", out.inputs));
  PLANNER_TRY_STATUS(o.req("outputs", out.outputs));
  return o.opt("collectives", out.collectives);
}

Status read(const Reader& r, const json& v, const std::string& path, Layout& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"dp", "tp", "pp", "cp", "ep", "vp", "sequence_parallel", "zero",
                              "distributed_optimizer", "tp_comm_overlap", "tp_splits_batch", "schedule", "mesh", "chunks",
                              "schedule_steps", "strategies"}));
  PLANNER_TRY_STATUS(o.req("dp", out.dp));
  PLANNER_TRY_STATUS(o.req("tp", out.tp));
  PLANNER_TRY_STATUS(o.req("pp", out.pp));
  PLANNER_TRY_STATUS(o.req("cp", out.cp));
  PLANNER_TRY_STATUS(o.req("ep", out.ep));
  PLANNER_TRY_STATUS(o.req("vp", out.vp));
  PLANNER_TRY_STATUS(o.req("sequence_parallel", out.sequence_parallel));
  PLANNER_TRY_STATUS(o.req("zero", out.zero));
  PLANNER_TRY_STATUS(o.req("distributed_optimizer", out.distributed_optimizer));
  PLANNER_TRY_STATUS(o.req("tp_comm_overlap", out.tp_comm_overlap));
  PLANNER_TRY_STATUS(o.opt("tp_splits_batch", out.tp_splits_batch));
  PLANNER_TRY_STATUS(o.req("schedule", out.schedule));
  PLANNER_TRY_STATUS(o.req("mesh", out.mesh));
  PLANNER_TRY_STATUS(o.req("chunks", out.chunks));
  PLANNER_TRY_STATUS(o.req("schedule_steps", out.schedule_steps));
  return o.req("strategies", out.strategies);
}

Status read(const Reader& r, const json& v, const std::string& path, MemoryItem& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"kind", "bytes", "label"}));
  PLANNER_TRY_STATUS(o.req("kind", out.kind));
  PLANNER_TRY_STATUS(o.req("bytes", out.bytes));
  return o.opt("label", out.label);
}

Status read(const Reader& r, const json& v, const std::string& path, StageMemory& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"stage", "peak_bytes", "fits", "parameters", "micro_batches_in_flight", "items"}));
  PLANNER_TRY_STATUS(o.req("stage", out.stage));
  PLANNER_TRY_STATUS(o.req("peak_bytes", out.peak_bytes));
  PLANNER_TRY_STATUS(o.req("fits", out.fits));
  PLANNER_TRY_STATUS(o.req("parameters", out.parameters));
  PLANNER_TRY_STATUS(o.req("micro_batches_in_flight", out.micro_batches_in_flight));
  return o.opt("items", out.items);
}

Status read(const Reader& r, const json& v, const std::string& path, Alternative& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"layout", "step_time_s", "fits", "why"}));
  PLANNER_TRY_STATUS(o.req("layout", out.layout));
  PLANNER_TRY_STATUS(o.req("step_time_s", out.step_time_s));
  PLANNER_TRY_STATUS(o.req("fits", out.fits));
  return o.opt("why", out.why);
}

Status read(const Reader& r, const json& v, const std::string& path, TimelineSpan& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"stream", "kind", "micro_batch", "chunk", "peer", "start_s", "end_s"}));
  PLANNER_TRY_STATUS(o.req("stream", out.stream));
  PLANNER_TRY_STATUS(o.req("kind", out.kind));
  PLANNER_TRY_STATUS(o.opt("micro_batch", out.micro_batch));
  PLANNER_TRY_STATUS(o.opt("chunk", out.chunk));
  PLANNER_TRY_STATUS(o.opt("peer", out.peer));
  PLANNER_TRY_STATUS(o.req("start_s", out.start_s));
  return o.req("end_s", out.end_s);
}

Status read(const Reader& r, const json& v, const std::string& path, StageTimeline& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"stage", "spans"}));
  PLANNER_TRY_STATUS(o.req("stage", out.stage));
  return o.req("spans", out.spans);
}

Status read(const Reader& r, const json& v, const std::string& path, Prediction& out) {
  Obj o(r, v, path);
  PLANNER_TRY_STATUS(o.check({"step_time_s", "breakdown_s", "model_tflops_per_device", "hardware_tflops_per_device",
                              "mfu", "hfu", "capacity_bytes", "fits", "stages", "lower_bound_s", "gap",
                              "alternatives", "timeline"}));
  PLANNER_TRY_STATUS(o.req("step_time_s", out.step_time_s));
  PLANNER_TRY_STATUS(o.opt("breakdown_s", out.breakdown_s));
  PLANNER_TRY_STATUS(o.req("model_tflops_per_device", out.model_tflops_per_device));
  PLANNER_TRY_STATUS(o.req("hardware_tflops_per_device", out.hardware_tflops_per_device));
  PLANNER_TRY_STATUS(o.req("mfu", out.mfu));
  PLANNER_TRY_STATUS(o.req("hfu", out.hfu));
  PLANNER_TRY_STATUS(o.req("capacity_bytes", out.capacity_bytes));
  PLANNER_TRY_STATUS(o.req("fits", out.fits));
  PLANNER_TRY_STATUS(o.opt("stages", out.stages));
  PLANNER_TRY_STATUS(o.opt("lower_bound_s", out.lower_bound_s));
  PLANNER_TRY_STATUS(o.opt("gap", out.gap));
  PLANNER_TRY_STATUS(o.opt("alternatives", out.alternatives));
  return o.opt("timeline", out.timeline);
}

template <typename T>
Status read(const Reader& r, const json& v, const std::string& path, std::vector<T>& out) {
  if (!v.is_array()) return r.expected(path, "an array", v);
  out.clear();
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    T x{};
    PLANNER_TRY_STATUS(read(r, v[i], fmt::format("{}[{}]", path, i), x));
    out.push_back(std::move(x));
  }
  return {};
}

template <typename T>
Status read(const Reader& r, const json& v, const std::string& path, std::map<std::string, T>& out) {
  if (!v.is_object()) return r.expected(path, "an object", v);
  out.clear();
  for (const auto& [key, value] : v.items()) {
    T x{};
    PLANNER_TRY_STATUS(read(r, value, core::json_path(path, key), x));
    out.emplace(key, std::move(x));
  }
  return {};
}

// --- parsing ------------------------------------------------------------------

/// Finds the first duplicate key while nlohmann parses (it would silently
/// keep the last one, hiding a typo in a hand-edited plan).
class DuplicateKeys {
 public:
  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: frames_.push_back({false, {}, {}, 0}); break;
      case json::parse_event_t::array_start: frames_.push_back({true, {}, {}, 0}); break;
      case json::parse_event_t::key: {
        auto& f = frames_.back();
        const auto& k = parsed.get_ref<const std::string&>();
        if (!f.seen.insert(k).second && !found_) found_ = fmt::format("{}: duplicate key '{}'", parent_path(), k);
        f.key = k;
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
        break;
      case json::parse_event_t::value:
        if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
        break;
    }
    return true;
  }
  const std::optional<std::string>& found() const { return found_; }

  /// The path of the value being read now (for errors the lexer raises
  /// before a value exists, such as a number overflowing a double).
  std::string current_path() const {
    std::string p;
    for (const auto& f : frames_) p = f.array ? p + fmt::format("[{}]", f.index) : core::json_path(p, f.key);
    return std::string(core::describe_json_path(p));
  }

 private:
  struct Frame {
    bool array;
    std::string key;
    std::set<std::string> seen;
    std::size_t index;
  };
  /// The path of the innermost (current) object.
  std::string parent_path() const {
    std::string p;
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
      const auto& f = frames_[i];
      p = f.array ? p + fmt::format("[{}]", f.index) : core::json_path(p, f.key);
    }
    return std::string(core::describe_json_path(p));
  }
  std::vector<Frame> frames_;
  std::optional<std::string> found_;
};

/// nlohmann's "[json.exception.parse_error.101] parse error at line 3,
/// column 5: syntax error ..." -> "line 3, column 5: syntax error ...".
std::string parse_message(const json::parse_error& e) {
  std::string what = e.what();
  const std::string marker = "parse error at ";
  if (auto at = what.find(marker); at != std::string::npos) return what.substr(at + marker.size());
  if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
  return "invalid JSON: " + what;
}

}  // namespace

Result<Plan> from_json(std::string_view text, std::string_view source) {
  const Reader r(source);
  json j;
  DuplicateKeys dup;
  try {
    j = json::parse(text.begin(), text.end(), std::ref(dup));
  } catch (const json::parse_error& e) {
    return Error{one_line(fmt::format("{}: {}", source, parse_message(e)))};
  } catch (const json::out_of_range& e) {
    // 406: a literal like 1e999 overflows to infinity.
    return Error{one_line(fmt::format("{}: {}: number is not finite (a literal like 1e999 overflows a double)",
                                      source, dup.current_path()))};
  } catch (const json::exception& e) {
    std::string what = e.what();
    if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
    return Error{one_line(fmt::format("{}: invalid JSON: {}", source, what))};
  }
  if (dup.found()) return Error{one_line(fmt::format("{}: {}", source, *dup.found()))};
  if (!j.is_object()) return r.expected("", "a JSON object (a planner plan)", j);

  // The version first: another version may have other keys.
  Plan p;
  auto fmt_it = j.find("format");
  if (fmt_it == j.end()) return r.fail("format", fmt::format("missing required field (expected \"{}\")", kFormat));
  PLANNER_TRY_STATUS(read(r, *fmt_it, "format", p.format));
  if (p.format != kFormat)
    return Error{one_line(fmt::format("{}: format '{}' is not supported (this planner reads {})", source, p.format,
                                      kFormat))};

  Obj o(r, j, "");
  PLANNER_TRY_STATUS(o.check({"format", "producer", "model", "cluster", "training", "layout", "prediction"}));
  PLANNER_TRY_STATUS(o.req("producer", p.producer));
  PLANNER_TRY_STATUS(o.req("model", p.model));
  PLANNER_TRY_STATUS(o.req("cluster", p.cluster));
  PLANNER_TRY_STATUS(o.req("training", p.training));
  PLANNER_TRY_STATUS(o.req("layout", p.layout));
  PLANNER_TRY_STATUS(o.req("prediction", p.prediction));

  if (auto s = validate(p); !s) return Error{one_line(fmt::format("{}: {}", source, s.error().message))};
  // Plans written before chunks listed their devices: from the mesh.
  for (auto& c : p.layout.chunks)
    if (c.devices.empty()) c.devices = stage_devices(p.layout, c.pipeline_rank);
  return p;
}

}  // namespace planner::plan
