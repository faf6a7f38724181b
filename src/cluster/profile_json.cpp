// The profile reader: JSON text -> ClusterProfile, with strict validation.
//
// Every check produces one line "<origin>: <json path>: <problem>". Numbers
// are accepted only as {"value": N, "source": "..."} or inside a table that
// has a "source"; unknown keys are errors, so a misspelt key cannot silently
// fall back to nothing.

#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "planner/core/json_path.hpp"
#include "planner/cluster/collective.hpp"
#include "planner/cluster/profile.hpp"
#include "internal.hpp"

namespace planner::cluster {
namespace {

using nlohmann::json;

constexpr double kGB = 1e9;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kTera = 1e12;
constexpr double kMicro = 1e-6;

/// The precisions in the order of the profile format's keys (fp16 before
/// bf16, unlike core::Precision's enumerators): fields are read, and the
/// first bad one reported, in this order.
constexpr std::array<core::Precision, core::kPrecisionCount> kKeyOrder{
    core::Precision::fp32, core::Precision::tf32, core::Precision::fp16, core::Precision::bf16, core::Precision::fp8};

/// Which values a number may take.
enum class Domain { positive, fraction, non_negative };

std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return fmt::format("a string (\"{}\")", v.get<std::string>());
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

std::string fmt_number(double v) { return fmt::format("{}", v); }

class Reader {
 public:
  Reader(std::string origin, std::map<std::string, std::string>& sources)
      : origin_(std::move(origin)), sources_(sources) {}

  /// Control characters from keys and strings are escaped: one line always.
  Error fail(std::string_view path, std::string_view msg) const {
    std::string out;
    for (char ch : fmt::format("{}: {}: {}", origin_, core::describe_json_path(path), msg)) {
      const auto c = static_cast<unsigned char>(ch);
      if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02x}", c);
      else out += ch;
    }
    return Error{std::move(out)};
  }

  Status object(const json& v, std::string_view path) const {
    if (!v.is_object()) return fail(path, fmt::format("expected an object, got {}", describe(v)));
    return Status::success();
  }

  /// Unknown keys are errors.
  Status keys(const json& obj, std::string_view path, std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, value] : obj.items()) {
      if (key == "notes" && !value.is_string())
        return fail(core::json_path(path, key), fmt::format("expected a string, got {}", describe(value)));
      bool ok = false;
      for (auto a : allowed) ok = ok || key == a;
      if (!ok) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return fail(core::json_path(path, key), fmt::format("unknown key (expected one of: {})", list));
      }
    }
    return Status::success();
  }

  Result<const json*> member(const json& obj, std::string_view path, std::string_view key) const {
    auto it = obj.find(std::string(key));
    if (it == obj.end()) return fail(core::json_path(path, key), "missing key");
    return &*it;
  }

  Result<double> number(const json& v, std::string_view path, Domain d) const {
    if (!v.is_number()) return fail(path, fmt::format("expected a number, got {}", describe(v)));
    double x = v.get<double>();
    if (!std::isfinite(x))
      return fail(path, "number is not finite (a literal like 1e999 overflows to infinity)");
    switch (d) {
      case Domain::positive:
        if (!(x > 0)) return fail(path, fmt::format("must be > 0, got {}", fmt_number(x)));
        break;
      case Domain::fraction:
        if (!(x > 0 && x <= 1)) return fail(path, fmt::format("must be in (0, 1], got {}", fmt_number(x)));
        break;
      case Domain::non_negative:
        if (!(x >= 0)) return fail(path, fmt::format("must be >= 0, got {}", fmt_number(x)));
        break;
    }
    return x;
  }

  Result<std::string> source_of(const json& obj, std::string_view path) const {
    auto it = obj.find("source");
    if (it == obj.end()) return fail(core::json_path(path, "source"), "missing: every number needs a source");
    if (!it->is_string()) return fail(core::json_path(path, "source"), fmt::format("expected a string, got {}", describe(*it)));
    auto s = it->get<std::string>();
    if (s.find_first_not_of(" \t\r\n") == std::string::npos) return fail(core::json_path(path, "source"), "empty source");
    return s;
  }

  /// {"value": N, "source": "..."} at obj[key].
  Result<double> sourced(const json& obj, std::string_view path, std::string_view key, Domain d) const {
    auto p = core::json_path(path, key);
    PLANNER_TRY(const json* v, member(obj, path, key));
    return sourced_value(*v, p, d);
  }

  Result<double> sourced_value(const json& v, const std::string& p, Domain d) const {
    if (v.is_number())
      return fail(p, fmt::format("number without a source; write {{\"value\": {}, \"source\": \"...\"}}",
                                 describe(v)));
    if (!v.is_object())
      return fail(p, fmt::format("expected {{\"value\": number, \"source\": string}}, got {}", describe(v)));
    PLANNER_TRY_STATUS(keys(v, p, {"value", "source"}));
    PLANNER_TRY(const json* value, member(v, p, "value"));
    PLANNER_TRY(std::string src, source_of(v, p));
    PLANNER_TRY(double x, number(*value, core::json_path(p, "value"), d));
    sources_[p] = std::move(src);
    return x;
  }

  /// Absent or null: nullopt.
  Result<std::optional<double>> optional_sourced(const json& obj, std::string_view path, std::string_view key,
                                                 Domain d) const {
    auto it = obj.find(std::string(key));
    if (it == obj.end() || it->is_null()) return std::optional<double>{};
    PLANNER_TRY(double x, sourced_value(*it, core::json_path(path, key), d));
    return std::optional<double>{x};
  }

  Result<int> sourced_int(const json& obj, std::string_view path, std::string_view key) const {
    PLANNER_TRY(double x, sourced(obj, path, key, Domain::positive));
    if (x != std::floor(x) || x > 1e6)
      return fail(core::json_path(core::json_path(path, key), "value"), fmt::format("must be a whole number, got {}", fmt_number(x)));
    return static_cast<int>(x);
  }

  Result<std::string> string(const json& obj, std::string_view path, std::string_view key, bool required) const {
    auto it = obj.find(std::string(key));
    if (it == obj.end()) {
      if (required) return fail(core::json_path(path, key), "missing key");
      return std::string();
    }
    if (!it->is_string()) return fail(core::json_path(path, key), fmt::format("expected a string, got {}", describe(*it)));
    auto s = it->get<std::string>();
    if (required && s.empty()) return fail(core::json_path(path, key), "empty string");
    return s;
  }

  /// {"x": expected_x, "source": "...", "rows": [[x, y], ...]} at obj[key].
  Result<CollectiveTable> table(const json& obj, std::string_view path, std::string_view key,
                                std::string_view expected_x, bool conditions = false) const {
    auto p = core::json_path(path, key);
    PLANNER_TRY(const json* tp, member(obj, path, key));
    const json& t = *tp;
    if (!t.is_object())
      return fail(p, fmt::format("expected a table {{\"x\", \"source\", \"rows\"}}, got {}", describe(t)));
    if (conditions) {
      PLANNER_TRY_STATUS(keys(t, p, {"x", "source", "rows", "min_ranks", "min_bytes", "notes"}));
    } else {
      PLANNER_TRY_STATUS(keys(t, p, {"x", "source", "rows", "notes"}));
    }
    PLANNER_TRY(std::string src, source_of(t, p));
    PLANNER_TRY(std::string x_name, string(t, p, "x", true));
    if (x_name != expected_x)
      return fail(core::json_path(p, "x"), fmt::format("table is over '{}', expected '{}'", x_name, expected_x));
    PLANNER_TRY(const json* rows, member(t, p, "rows"));
    auto rp = core::json_path(p, "rows");
    if (!rows->is_array()) return fail(rp, fmt::format("expected an array of [x, y] rows, got {}", describe(*rows)));
    if (rows->empty()) return fail(rp, "table has no rows");
    CollectiveTable out;
    out.efficiency.x_name = x_name;
    for (std::size_t i = 0; i < rows->size(); ++i) {
      const json& r = (*rows)[i];
      auto ip = fmt::format("{}[{}]", rp, i);
      if (!r.is_array() || r.size() != 2) return fail(ip, fmt::format("expected a row [x, y], got {}", describe(r)));
      PLANNER_TRY(double x, number(r[0], ip + "[0]", Domain::positive));
      PLANNER_TRY(double y, number(r[1], ip + "[1]", Domain::fraction));
      if (!out.efficiency.rows.empty() && !(x > out.efficiency.rows.back().x))
        return fail(ip, fmt::format("rows not sorted: x = {} after x = {} (x must increase strictly)", fmt_number(x),
                                    fmt_number(out.efficiency.rows.back().x)));
      out.efficiency.rows.push_back({x, y});
    }
    if (conditions) {
      if (auto it = t.find("min_ranks"); it != t.end()) {
        PLANNER_TRY(double n, number(*it, core::json_path(p, "min_ranks"), Domain::positive));
        if (n != std::floor(n) || n < 2 || n > 1e6)
          return fail(core::json_path(p, "min_ranks"), fmt::format("must be a whole number >= 2, got {}", fmt_number(n)));
        out.min_ranks = static_cast<int>(n);
      }
      if (auto it = t.find("min_bytes"); it != t.end()) {
        PLANNER_TRY(double b, number(*it, core::json_path(p, "min_bytes"), Domain::non_negative));
        out.min_bytes = Bytes(b);
      }
    }
    sources_[p] = std::move(src);
    return out;
  }

  /// A per-collective table: a table over message_bytes that may also hold
  /// "latency_us" (microseconds, >= 0), covered by the table's source.
  Result<CollectiveOverride> collective_table(const json& obj, std::string_view path, std::string_view key) const {
    auto p = core::json_path(path, key);
    PLANNER_TRY(const json* tp, member(obj, path, key));
    if (!tp->is_object())
      return fail(p, fmt::format("expected a table {{\"x\", \"source\", \"rows\"}}, got {}", describe(*tp)));
    PLANNER_TRY_STATUS(keys(*tp, p, {"x", "source", "rows", "latency_us", "notes"}));
    json without = *tp;
    without.erase("latency_us");
    PLANNER_TRY(CollectiveTable t, table(json{{std::string(key), without}}, path, key, "message_bytes"));
    CollectiveOverride out{std::move(t.efficiency), std::nullopt};
    if (auto it = tp->find("latency_us"); it != tp->end()) {
      PLANNER_TRY(double us, number(*it, core::json_path(p, "latency_us"), Domain::non_negative));
      out.latency = Seconds(us * kMicro);
    }
    return out;
  }

  Result<EfficiencyTable> plain_table(const json& obj, std::string_view path, std::string_view key,
                                      std::string_view expected_x) const {
    PLANNER_TRY(CollectiveTable t, table(obj, path, key, expected_x));
    return std::move(t.efficiency);
  }

 private:
  std::string origin_;
  std::map<std::string, std::string>& sources_;
};

Result<DeviceProfile> read_device(const Reader& r, const json& d) {
  const std::string path = "device";
  PLANNER_TRY_STATUS(r.object(d, path));
  PLANNER_TRY_STATUS(r.keys(d, path,
                            {"name", "peak_tflops", "hbm_GB", "visible_GiB", "cuda_context_GiB", "communicator_GiB",
                             "hbm_GBps", "hbm_efficiency", "elementwise_efficiency", "launch_overhead_us",
                             "gemm_efficiency", "gemm_skinny_efficiency", "gemm_misaligned_factor",
                             "gemm_alignment_bytes", "gemm_precision_factor", "attention_efficiency", "step_time_cv",
                             "memory_margin_fraction", "allocator_fragmentation_fraction", "special_function_rate_per_s", "erf_rate_per_s", "adam_update_rate_params_per_s",
                             "memory_bound_class_efficiency", "memory_bound_op_efficiency", "notes"}));
  DeviceProfile dev;
  PLANNER_TRY(dev.name, r.string(d, path, "name", true));

  PLANNER_TRY(const json* peaks, r.member(d, path, "peak_tflops"));
  const std::string pp = core::json_path(path, "peak_tflops");
  PLANNER_TRY_STATUS(r.object(*peaks, pp));
  PLANNER_TRY_STATUS(r.keys(*peaks, pp, {"fp32", "tf32", "fp16", "bf16", "fp8"}));
  bool any = false;
  for (core::Precision p : kKeyOrder) {
    auto name = core::precision_name(p);
    PLANNER_TRY(std::optional<double> t, r.optional_sourced(*peaks, pp, name, Domain::positive));
    if (t) dev.peak_by_precision[static_cast<std::size_t>(p)] = FlopsPerSecond(*t * kTera);
    any = any || t.has_value();
  }
  if (!any) return r.fail(pp, "no precision has a peak");

  PLANNER_TRY(dev.hbm_GB, r.sourced(d, path, "hbm_GB", Domain::positive));
  PLANNER_TRY(double visible, r.sourced(d, path, "visible_GiB", Domain::positive));
  PLANNER_TRY(double context, r.sourced(d, path, "cuda_context_GiB", Domain::non_negative));
  PLANNER_TRY(double comm, r.sourced(d, path, "communicator_GiB", Domain::non_negative));
  if (context >= visible)
    return r.fail(core::json_path(path, "cuda_context_GiB"),
                  fmt::format("{} GiB leaves nothing of visible_GiB = {}", fmt_number(context), fmt_number(visible)));
  dev.visible_memory = Bytes(visible * kGiB);
  dev.context_memory = Bytes(context * kGiB);
  dev.communicator_memory = Bytes(comm * kGiB);
  PLANNER_TRY(double hbm, r.sourced(d, path, "hbm_GBps", Domain::positive));
  dev.hbm_bandwidth = BytesPerSecond(hbm * kGB);
  PLANNER_TRY(dev.hbm_efficiency, r.sourced(d, path, "hbm_efficiency", Domain::fraction));
  PLANNER_TRY(dev.elementwise_table, r.plain_table(d, path, "elementwise_efficiency", "bytes"));
  PLANNER_TRY(double launch, r.sourced(d, path, "launch_overhead_us", Domain::non_negative));
  dev.launch_overhead = Seconds(launch * kMicro);
  PLANNER_TRY(dev.gemm_table, r.plain_table(d, path, "gemm_efficiency", "flops"));
  PLANNER_TRY(dev.gemm_skinny_table, r.plain_table(d, path, "gemm_skinny_efficiency", "min_dim"));
  PLANNER_TRY(dev.gemm_misaligned_factor, r.sourced(d, path, "gemm_misaligned_factor", Domain::fraction));
  PLANNER_TRY(dev.gemm_alignment_bytes, r.sourced_int(d, path, "gemm_alignment_bytes"));
  PLANNER_TRY(dev.step_time_cv, r.optional_sourced(d, path, "step_time_cv", Domain::fraction));
  PLANNER_TRY(dev.memory_margin, r.optional_sourced(d, path, "memory_margin_fraction", Domain::fraction));
  if (dev.memory_margin && *dev.memory_margin >= 1)
    return r.fail(core::json_path(core::json_path(path, "memory_margin_fraction"), "value"),
                  fmt::format("must be below 1, got {}", fmt_number(*dev.memory_margin)));
  PLANNER_TRY(dev.allocator_fragmentation,
              r.optional_sourced(d, path, "allocator_fragmentation_fraction", Domain::fraction));
  if (dev.allocator_fragmentation && *dev.allocator_fragmentation >= 1)
    return r.fail(core::json_path(core::json_path(path, "allocator_fragmentation_fraction"), "value"),
                  fmt::format("must be below 1, got {}", fmt_number(*dev.allocator_fragmentation)));
  PLANNER_TRY(dev.special_function_rate_per_s,
              r.optional_sourced(d, path, "special_function_rate_per_s", Domain::positive));
  PLANNER_TRY(dev.erf_rate_per_s, r.optional_sourced(d, path, "erf_rate_per_s", Domain::positive));
  PLANNER_TRY(dev.adam_update_rate_params_per_s,
              r.optional_sourced(d, path, "adam_update_rate_params_per_s", Domain::positive));

  for (auto [key, tables] : {std::pair{"memory_bound_class_efficiency", &dev.memory_bound_class_efficiency},
                             std::pair{"memory_bound_op_efficiency", &dev.memory_bound_op_efficiency}}) {
    const auto it = d.find(key);
    if (it == d.end() || it->is_null()) continue;
    const std::string cp = core::json_path(path, key);
    PLANNER_TRY_STATUS(r.object(*it, cp));
    for (const auto& [name, v] : it->items()) {
      PLANNER_TRY(EfficiencyTable t, r.plain_table(*it, cp, name, "bytes"));
      (*tables)[name] = std::move(t);
    }
  }
  if (auto it = d.find("gemm_precision_factor"); it != d.end()) {
    const std::string fp = core::json_path(path, "gemm_precision_factor");
    PLANNER_TRY_STATUS(r.object(*it, fp));
    PLANNER_TRY_STATUS(r.keys(*it, fp, {"fp32", "tf32", "fp16", "bf16", "fp8"}));
    for (core::Precision p : kKeyOrder) {
      auto name = core::precision_name(p);
      PLANNER_TRY(std::optional<double> f, r.optional_sourced(*it, fp, name, Domain::positive));
      if (f && *f > 2) return r.fail(core::json_path(core::json_path(fp, name), "value"), fmt::format("must be <= 2, got {}", *f));
      dev.gemm_precision_factor[static_cast<std::size_t>(p)] = f;
    }
  }
  if (auto it = d.find("attention_efficiency"); it != d.end() && !it->is_null()) {
    const std::string ap = core::json_path(path, "attention_efficiency");
    PLANNER_TRY_STATUS(r.object(*it, ap));
    PLANNER_TRY_STATUS(r.keys(*it, ap, {"causal", "full", "notes"}));
    AttentionEfficiency att;
    PLANNER_TRY(att.causal, r.plain_table(*it, ap, "causal", "seq_len"));
    PLANNER_TRY(att.full, r.plain_table(*it, ap, "full", "seq_len"));
    dev.attention = std::move(att);
  }
  return dev;
}

Result<Level> read_level(const Reader& r, const json& l, const std::string& path, bool last) {
  PLANNER_TRY_STATUS(r.object(l, path));
  Level level;
  level.inter_node = l.contains("nics_per_node") || l.contains("nic_GBps");
  if (last && !level.inter_node)
    return r.fail(path, "the last level must be the inter-node level (with nics_per_node and nic_GBps)");
  if (!last && level.inter_node)
    return r.fail(path, "only the last level may cross nodes (nics_per_node, nic_GBps)");
  if (level.inter_node) {
    PLANNER_TRY_STATUS(r.keys(l, path, {"name", "fabric", "nics_per_node", "nic_GBps", "latency_us", "simple_latency_us", "efficiency",
                                        "nodes_per_leaf", "oversubscription", "collnet", "notes"}));
    PLANNER_TRY(level.nics_per_node, r.sourced_int(l, path, "nics_per_node"));
    PLANNER_TRY(double nic, r.sourced(l, path, "nic_GBps", Domain::positive));
    level.nic_bandwidth = BytesPerSecond(nic * kGB);
    // A leaf/spine fabric that is not non-blocking: both keys or neither.
    const bool leaf = l.contains("nodes_per_leaf"), over = l.contains("oversubscription");
    if (leaf != over)
      return r.fail(core::json_path(path, leaf ? "oversubscription" : "nodes_per_leaf"),
                    "missing key: nodes_per_leaf and oversubscription describe the fabric together");
    if (leaf) {
      PLANNER_TRY(level.nodes_per_leaf, r.sourced_int(l, path, "nodes_per_leaf"));
      PLANNER_TRY(double ratio, r.sourced(l, path, "oversubscription", Domain::positive));
      if (ratio < 1)
        return r.fail(core::json_path(core::json_path(path, "oversubscription"), "value"),
                      fmt::format("must be >= 1 (downlink over uplink bandwidth; 1 = non-blocking), got {}",
                                  fmt_number(ratio)));
      level.oversubscription = ratio;
    }
    if (auto it = l.find("collnet"); it != l.end()) {
      const std::string cp = core::json_path(path, "collnet");
      PLANNER_TRY_STATUS(r.object(*it, cp));
      PLANNER_TRY_STATUS(r.keys(*it, cp, {"latency_us", "efficiency", "notes"}));
      Level::CollNet cn;
      PLANNER_TRY(double lat, r.sourced(*it, cp, "latency_us", Domain::non_negative));
      cn.latency = Seconds(lat * kMicro);
      PLANNER_TRY(cn.efficiency, r.sourced(*it, cp, "efficiency", Domain::fraction));
      level.collnet = cn;
    }
  } else {
    PLANNER_TRY_STATUS(r.keys(l, path, {"name", "fabric", "devices_per_group", "bandwidth_GBps", "latency_us",
                                        "simple_latency_us", "efficiency", "notes"}));
    PLANNER_TRY(level.devices_per_group, r.sourced_int(l, path, "devices_per_group"));
    PLANNER_TRY(double bw, r.sourced(l, path, "bandwidth_GBps", Domain::positive));
    level.bandwidth = BytesPerSecond(bw * kGB);
  }
  PLANNER_TRY(level.name, r.string(l, path, "name", true));
  PLANNER_TRY(level.fabric, r.string(l, path, "fabric", false));
  PLANNER_TRY(double lat, r.sourced(l, path, "latency_us", Domain::non_negative));
  level.latency = Seconds(lat * kMicro);
  PLANNER_TRY(std::optional<double> simple, r.optional_sourced(l, path, "simple_latency_us", Domain::non_negative));
  if (simple) level.simple_latency = Seconds(*simple * kMicro);

  PLANNER_TRY(const json* eff, r.member(l, path, "efficiency"));
  const std::string ep = core::json_path(path, "efficiency");
  PLANNER_TRY_STATUS(r.object(*eff, ep));
  PLANNER_TRY_STATUS(r.keys(*eff, ep,
                            {"ring", "tree", "nvls", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                             "send_recv", "broadcast"}));
  PLANNER_TRY(level.ring, r.table(*eff, ep, "ring", "message_bytes", true));
  if (eff->contains("tree")) {
    PLANNER_TRY(CollectiveTable t, r.table(*eff, ep, "tree", "message_bytes", true));
    level.tree = std::move(t);
  }
  if (eff->contains("nvls")) {
    if (level.inter_node) return r.fail(core::json_path(ep, "nvls"), "NVLS exists only inside a node");
    PLANNER_TRY(CollectiveTable t, r.table(*eff, ep, "nvls", "message_bytes", true));
    level.nvls = std::move(t);
  }
  // Per-collective tables (written by planner calibrate): optional, one per
  // collective name; absent ones fall back to the ring table.
  for (core::Collective c : core::kCollectives) {
    auto name = core::to_string(c);  // the JSON key of its own table
    if (!eff->contains(name)) continue;
    PLANNER_TRY(CollectiveOverride t, r.collective_table(*eff, ep, name));
    level.per_collective[static_cast<std::size_t>(c)] = std::move(t);
  }
  return level;
}

Result<Interconnect> read_interconnect(const Reader& r, const json& ic) {
  const std::string path = "interconnect";
  PLANNER_TRY_STATUS(r.object(ic, path));
  PLANNER_TRY_STATUS(r.keys(ic, path, {"levels", "simple_base_latency_us", "notes"}));
  PLANNER_TRY(const json* levels, r.member(ic, path, "levels"));
  const std::string lp = core::json_path(path, "levels");
  if (!levels->is_array()) return r.fail(lp, fmt::format("expected an array of levels, got {}", describe(*levels)));
  if (levels->size() < 2)
    return r.fail(lp, "need at least one intra-node level and the inter-node level");
  Interconnect out;
  PLANNER_TRY(std::optional<double> base, r.optional_sourced(ic, path, "simple_base_latency_us", Domain::non_negative));
  if (base) out.simple_base_latency = Seconds(*base * kMicro);
  for (std::size_t i = 0; i < levels->size(); ++i) {
    auto p = fmt::format("{}[{}]", lp, i);
    PLANNER_TRY(Level level, read_level(r, (*levels)[i], p, i + 1 == levels->size()));
    if (!level.inter_node && !out.levels.empty()) {
      int inner = out.levels.back().devices_per_group;
      if (level.devices_per_group < inner || level.devices_per_group % inner != 0)
        return r.fail(core::json_path(p, "devices_per_group"),
                      fmt::format("{} must be a multiple of the inner level's group size {}",
                                  level.devices_per_group, inner));
    }
    out.levels.push_back(std::move(level));
  }
  return out;
}

/// Finds the JSON path at which parsing fails, for error messages: a SAX
/// pass that tracks the current key/index. nlohmann rejects a literal that
/// overflows a double (1e999) with error 406 at the lexer, before any value
/// exists, so this is the only way to name the key.
class PathTracker : public nlohmann::json_sax<json> {
 public:
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { frames_.push_back({false, "", 0}); return true; }
  bool key(string_t& k) override { frames_.back().key = k; return true; }
  bool end_object() override { frames_.pop_back(); return value(); }
  bool start_array(std::size_t) override { frames_.push_back({true, "", 0}); return true; }
  bool end_array() override { frames_.pop_back(); return value(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    error_id_ = ex.id;
    message_ = ex.what();
    // Appended in place, and only the outermost and innermost levels of a
    // deep nest: 100000 unclosed arrays must not cost a quadratic copy.
    constexpr std::size_t kEnds = 16;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      if (frames_.size() > 2 * kEnds && i == kEnds) {
        path_ += fmt::format("...({} levels)...", frames_.size() - 2 * kEnds);
        i = frames_.size() - kEnds;
      }
      const auto& f = frames_[i];
      if (f.array) path_ += fmt::format("[{}]", f.index);
      else if (path_.empty()) path_ = f.key;
      else path_ += "." + f.key;
    }
    return false;
  }
  const std::string& path() const { return path_; }
  const std::string& message() const { return message_; }
  int error_id() const { return error_id_; }

 private:
  struct Frame {
    bool array;
    std::string key;
    long index;
  };
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return true;
  }
  std::vector<Frame> frames_;
  std::string path_, message_;
  int error_id_ = 0;
};

std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::string hash_hex(std::string_view bytes, std::string_view salt) {
  return fmt::format("{:016x}", fnv1a(salt, fnv1a(bytes)));
}

Result<ClusterProfile> parse_profile(std::string_view text, std::string_view origin) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    PathTracker where;
    json::sax_parse(text.begin(), text.end(), &where, nlohmann::detail::input_format_t::json, /*strict=*/true);
    std::string path(core::describe_json_path(where.path()));
    // The path holds keys as written and the parser's message the bytes it
    // last read: escape control characters, so the error stays one line.
    auto one_line = [](const std::string& m) {
      std::string out;
      for (char ch : m) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02x}", c);
        else out += ch;
      }
      return Error{std::move(out)};
    };
    if (where.error_id() == 406)
      return one_line(fmt::format("{}: {}: number is not finite (a literal like 1e999 overflows to infinity)", origin, path));
    return one_line(fmt::format("{}: {}: not valid JSON: {}", origin, path, where.message()));
  }
  ClusterProfile out;
  Reader r(std::string(origin), out.sources);
  PLANNER_TRY_STATUS(r.object(j, ""));
  PLANNER_TRY_STATUS(
      r.keys(j, "", {"schema_version", "name", "system", "source", "notes", "provenance", "device", "interconnect"}));
  // "provenance" (written by planner calibrate): an object of strings, no
  // numbers (every number of a profile lives where it has a source).
  if (auto it = j.find("provenance"); it != j.end()) {
    PLANNER_TRY_STATUS(r.object(*it, "provenance"));
    for (const auto& [key, value] : it->items())
      if (!value.is_string())
        return r.fail(core::json_path("provenance", key), fmt::format("expected a string, got {}", describe(value)));
  }
  PLANNER_TRY(const json* version, r.member(j, "", "schema_version"));
  if (!version->is_number_integer() || version->get<long long>() != 1)
    return r.fail("schema_version", fmt::format("expected 1, got {}", describe(*version)));
  PLANNER_TRY(out.name, r.string(j, "", "name", true));
  if (out.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos)
    return r.fail("name", fmt::format("'{}' may use only lowercase letters, digits, '.', '_' and '-'", out.name));
  PLANNER_TRY(out.system, r.string(j, "", "system", true));
  PLANNER_TRY(out.source, r.string(j, "", "source", true));
  PLANNER_TRY(out.notes, r.string(j, "", "notes", false));
  PLANNER_TRY(const json* device, r.member(j, "", "device"));
  PLANNER_TRY(out.device, read_device(r, *device));
  PLANNER_TRY(const json* ic, r.member(j, "", "interconnect"));
  PLANNER_TRY(out.interconnect, read_interconnect(r, *ic));
  out.devices_per_node = out.interconnect.devices_per_node();
  // nlohmann's object is a sorted map: dump() is canonical (sorted keys, no
  // whitespace), so reformatting the file does not change the hash.
  out.content_hash = hash_hex(j.dump(), "");
  return out;
}

}  // namespace planner::cluster
