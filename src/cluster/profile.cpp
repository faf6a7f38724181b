// Profile value types: interpolation, device helpers, loading by name,
// overrides, and finding the profiles folder.

#include "planner/cluster/profile.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <system_error>

#include <fmt/format.h>

#include "internal.hpp"
#include "planner/core/io.hpp"

namespace planner::cluster {
double EfficiencyTable::interpolate(double x) const {
  assert(!rows.empty());
  if (!(x > rows.front().x)) return rows.front().y;  // also NaN and x <= 0
  if (x >= rows.back().x) return rows.back().y;
  auto hi = std::upper_bound(rows.begin(), rows.end(), x, [](double v, const Row& r) { return v < r.x; });
  auto lo = hi - 1;
  double t = (std::log(x) - std::log(lo->x)) / (std::log(hi->x) - std::log(lo->x));
  return lo->y + t * (hi->y - lo->y);
}

Result<FlopsPerSecond> DeviceProfile::peak(core::Precision p) const {
  const auto& v = peak_by_precision[static_cast<std::size_t>(p)];
  if (!v) return make_error("device '{}' has no {} peak (peak_tflops.{} is null or absent)", name, core::precision_name(p),
                            core::precision_name(p));
  return *v;
}

double DeviceProfile::gemm_efficiency(std::int64_t m, std::int64_t n, std::int64_t k) const {
  return gemm_efficiency(m, n, k, core::Precision::bf16);
}

double DeviceProfile::gemm_efficiency(std::int64_t m, std::int64_t n, std::int64_t k, core::Precision p) const {
  m = std::max<std::int64_t>(m, 1);
  n = std::max<std::int64_t>(n, 1);
  k = std::max<std::int64_t>(k, 1);
  double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  double e = gemm_table.interpolate(flops);
  e *= gemm_skinny_table.interpolate(static_cast<double>(std::min({m, n, k})));
  std::int64_t elems = std::max(1, gemm_alignment_bytes / core::precision_bytes(p));
  if (m % elems != 0 || n % elems != 0 || k % elems != 0) e *= gemm_misaligned_factor;
  if (const auto& f = gemm_precision_factor[static_cast<std::size_t>(p)]) e *= *f;
  return std::min(e, 1.0);
}

BytesPerSecond DeviceProfile::achievable_hbm_bandwidth() const { return hbm_bandwidth * hbm_efficiency; }

double DeviceProfile::memory_bound_efficiency(Bytes moved) const { return elementwise_table.interpolate(moved.value); }

const EfficiencyTable* DeviceProfile::kernel_table(std::string_view op_type, std::string_view op_class) const {
  if (const auto it = memory_bound_op_efficiency.find(op_type); it != memory_bound_op_efficiency.end()) return &it->second;
  if (const auto it = memory_bound_class_efficiency.find(op_class); it != memory_bound_class_efficiency.end())
    return &it->second;
  return nullptr;
}

std::optional<double> DeviceProfile::attention_efficiency(std::int64_t seq_len, bool causal) const {
  if (!attention) return std::nullopt;
  const auto& t = causal ? attention->causal : attention->full;
  return t.interpolate(static_cast<double>(seq_len));
}

Bytes DeviceProfile::usable_memory() const { return visible_memory - context_memory; }

const EfficiencyTable& Level::table_for(core::Collective kind) const {
  const auto& own = per_collective[static_cast<std::size_t>(kind)];
  return own ? own->efficiency : ring.efficiency;
}

Seconds Level::latency_for(core::Collective kind) const {
  const auto& own = per_collective[static_cast<std::size_t>(kind)];
  return own && own->latency ? *own->latency : latency;
}

BytesPerSecond Level::per_rank_bandwidth(int ranks_per_node) const {
  if (!inter_node) return bandwidth;
  int k = std::max(ranks_per_node, 1);
  return nic_bandwidth * (static_cast<double>(std::min(k, nics_per_node)) / k);
}

int Interconnect::devices_per_node() const {
  for (auto it = levels.rbegin(); it != levels.rend(); ++it)
    if (!it->inter_node) return it->devices_per_group;
  return 1;
}

Result<ClusterProfile> load_profile(std::string_view name_or_path, const std::filesystem::path& profiles_dir) {
  if (name_or_path.empty()) return make_error("profile: empty name; expected a profile name or a .json path");
  std::filesystem::path file;
  bool is_path = name_or_path.find('/') != std::string_view::npos ||
                 (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json");
  if (is_path) {
    file = std::filesystem::path(name_or_path);
  } else {
    file = profiles_dir / (std::string(name_or_path) + ".json");
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      auto known = list_profiles(profiles_dir);
      std::string list;
      for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
      return make_error("{}: no such profile '{}' in {} (known: {})", file.string(), name_or_path,
                        profiles_dir.string(), list.empty() ? "none" : list);
    }
  }
  PLANNER_TRY(std::string text, io::read_file(file));
  PLANNER_TRY(ClusterProfile p, parse_profile(text, file.string()));
  if (p.name != file.stem().string())
    return make_error("{}: name: '{}' differs from the file name '{}'", file.string(), p.name, file.stem().string());
  p.file = file;
  return p;
}

Result<ClusterProfile> apply_overrides(ClusterProfile p, std::optional<int> gpus_per_node,
                                       std::optional<double> inter_node_GBps) {
  return apply_overrides(std::move(p), ProfileOverrides{gpus_per_node, inter_node_GBps, {}, {}});
}

Result<ClusterProfile> apply_overrides(ClusterProfile p, const ProfileOverrides& o) {
  const auto& [gpus_per_node, inter_node_GBps, nodes_per_leaf, oversubscription] = o;
  std::string applied;
  if (gpus_per_node) {
    int g = *gpus_per_node;
    if (g < 1 || g > 4096)
      return make_error("override gpus_per_node: must be a whole number in [1, 4096], got {}", g);
    auto& levels = p.interconnect.levels;
    // levels.size() - 1 is the inter-node level; the one before is the node.
    for (std::size_t i = 0; i + 1 < levels.size(); ++i) {
      Level& l = levels[i];
      bool node_level = i + 2 == levels.size();
      if (node_level || l.devices_per_group >= g) {
        l.devices_per_group = g;
      } else if (g % l.devices_per_group != 0) {
        return make_error("override gpus_per_node: {} is not a multiple of the '{}' group size {} of profile '{}'", g,
                          l.name, l.devices_per_group, p.name);
      }
    }
    p.devices_per_node = p.interconnect.devices_per_node();
    applied += fmt::format("gpus_per_node={}", g);
  }
  if (inter_node_GBps) {
    double v = *inter_node_GBps;
    if (!std::isfinite(v) || !(v > 0) || v > 1e6)
      return make_error("override inter_node_GBps: must be a finite number of GB/s per node in (0, 1e6], got {}", v);
    Level& x = p.interconnect.levels.back();
    x.nic_bandwidth = BytesPerSecond(v * 1e9 / x.nics_per_node);
    applied += fmt::format("{}inter_node_GBps={}", applied.empty() ? "" : ", ", v);
  }
  if (nodes_per_leaf.has_value() != oversubscription.has_value())
    return make_error("override {}: give nodes_per_leaf and oversubscription together",
                      nodes_per_leaf ? "nodes_per_leaf" : "oversubscription");
  if (nodes_per_leaf) {
    if (*nodes_per_leaf < 1 || *nodes_per_leaf > 1000000)
      return make_error("override nodes_per_leaf: must be a whole number in [1, 1000000], got {}", *nodes_per_leaf);
    const double r = *oversubscription;
    if (!std::isfinite(r) || r < 1 || r > 1000)
      return make_error("override oversubscription: must be in [1, 1000] (downlink over uplink bandwidth; 1 = "
                        "non-blocking), got {}",
                        r);
    Level& x = p.interconnect.levels.back();
    x.nodes_per_leaf = *nodes_per_leaf;
    x.oversubscription = r;
    applied += fmt::format("{}nodes_per_leaf={}, oversubscription={}", applied.empty() ? "" : ", ", *nodes_per_leaf, r);
  }
  if (!applied.empty()) {
    p.overrides += (p.overrides.empty() ? "" : ", ") + applied;
    p.content_hash = hash_hex(p.content_hash, "|" + applied);
  }
  return p;
}

std::vector<std::string> list_profiles(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& path = it->path();
    if (path.extension() == ".json" && it->is_regular_file(ec)) out.push_back(path.stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::filesystem::path> profiles_dir_candidates(const char* argv0, const char* env) {
  std::vector<std::filesystem::path> out;
  if (env && *env) out.emplace_back(env);
  std::error_code ec;
  std::filesystem::path exe;
  if (argv0 && std::string_view(argv0).find('/') != std::string_view::npos) {
    exe = std::filesystem::absolute(argv0, ec);
  } else {
    exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  }
  if (!ec && !exe.empty()) {
    auto dir = exe.parent_path();
    out.push_back((dir / ".." / "cost_profiles").lexically_normal());
    out.push_back((dir / ".." / ".." / "cost_profiles").lexically_normal());
  }
#ifdef PLANNER_SOURCE_DIR
  out.push_back(std::filesystem::path(PLANNER_SOURCE_DIR) / "cost_profiles");
#endif
  return out;
}

std::filesystem::path default_profiles_dir(const char* argv0) {
  const char* env = std::getenv("PLANNER_PROFILES");
  if (env && *env) return env;
  std::error_code ec;
  for (const auto& dir : profiles_dir_candidates(argv0, nullptr))
    if (std::filesystem::is_directory(dir, ec)) return dir;
  return "cost_profiles";
}

}  // namespace planner::cluster
