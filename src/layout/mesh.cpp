#include "planner/layout/mesh.hpp"

#include <cassert>
#include <limits>
#include <map>
#include <set>

#include "text.hpp"

namespace planner::layout {

std::string_view axis_level_name(AxisLevel level) {
  switch (level) {
    case AxisLevel::intra_node: return "intra_node";
    case AxisLevel::inter_node: return "inter_node";
    case AxisLevel::mixed: return "mixed";
  }
  return "?";
}

DeviceMesh::DeviceMesh() = default;

Result<DeviceMesh> DeviceMesh::create(std::vector<AxisSpec> axes, std::optional<int> devices_per_node) {
  if (static_cast<int>(axes.size()) > kMaxMeshAxes)
    return make_error("mesh has {} axes; at most {} are supported", axes.size(), kMaxMeshAxes);
  DeviceMesh m;
  std::set<std::string, std::less<>> seen;
  std::int64_t devices = 1;
  for (auto& a : axes) {
    if (!detail::is_identifier(a.name))
      return make_error("mesh axis name \"{}\" is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", a.name);
    if (!seen.insert(a.name).second) return make_error("mesh axis \"{}\" appears twice", a.name);
    if (a.size < 1) return make_error("mesh axis {} has size {}; sizes must be >= 1", a.name, a.size);
    devices *= a.size;
    if (devices > std::numeric_limits<int>::max())
      return make_error("mesh has more than {} devices", std::numeric_limits<int>::max());
    m.axes_.push_back(Axis{std::move(a.name), a.size, 1, 1});
  }
  m.devices_ = static_cast<int>(devices);
  int stride = 1;
  for (auto it = m.axes_.rbegin(); it != m.axes_.rend(); ++it) {
    it->stride = stride;
    stride *= it->size;
  }
  int dpn = devices_per_node.value_or(m.devices_);
  if (dpn < 1) return make_error("devices per node is {}; it must be >= 1", dpn);
  if (dpn >= m.devices_) dpn = m.devices_;
  if (m.devices_ % dpn != 0)
    return make_error("{} devices do not fill whole nodes of {} devices", m.devices_, dpn);
  m.devices_per_node_ = dpn;

  // Per axis: count, for every group, its members on each node touched; all
  // counts must agree. Visits each rank once per axis.
  for (auto& ax : m.axes_) {
    std::optional<int> per_node;
    for (int r = 0; r < m.devices_; ++r) {
      if ((r / ax.stride) % ax.size != 0) continue;  // not a group leader
      // The members ascend, so their nodes do: each node's count is a run.
      for (int k = 0; k < ax.size;) {
        const int node = (r + k * ax.stride) / dpn;
        int n = 0;
        for (; k < ax.size && (r + k * ax.stride) / dpn == node; ++k) ++n;
        if (!per_node) per_node = n;
        if (*per_node != n) {
          std::string shown = to_string(m);
          return make_error("{}: the groups of axis {} are spread unevenly over nodes of {} devices",
                            shown, ax.name, dpn);
        }
      }
    }
    ax.ranks_per_node = per_node.value_or(1);
  }
  return m;
}

std::vector<MeshAxis> DeviceMesh::axes() const {
  std::vector<MeshAxis> out;
  for (int i = 0; i < num_axes(); ++i) out.emplace_back(i);
  return out;
}

const DeviceMesh::Axis& DeviceMesh::at(MeshAxis axis) const {
  assert(axis.index() >= 0 && axis.index() < num_axes());
  return axes_[static_cast<std::size_t>(axis.index())];
}

AxisLevel DeviceMesh::level(MeshAxis axis) const {
  int per = ranks_per_node(axis);
  if (per == size(axis)) return AxisLevel::intra_node;
  if (per == 1) return AxisLevel::inter_node;
  return AxisLevel::mixed;
}

std::optional<MeshAxis> DeviceMesh::find(std::string_view name) const {
  for (int i = 0; i < num_axes(); ++i)
    if (axes_[static_cast<std::size_t>(i)].name == name) return MeshAxis(i);
  return std::nullopt;
}

int DeviceMesh::rank_of(std::span<const int> coords) const {
  assert(static_cast<int>(coords.size()) == num_axes());
  int r = 0;
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    assert(coords[i] >= 0 && coords[i] < axes_[i].size);
    r += coords[i] * axes_[i].stride;
  }
  return r;
}

std::vector<int> DeviceMesh::coords_of(int rank) const {
  assert(rank >= 0 && rank < devices_);
  std::vector<int> c(axes_.size());
  for (std::size_t i = 0; i < axes_.size(); ++i) c[i] = (rank / axes_[i].stride) % axes_[i].size;
  return c;
}

std::vector<int> DeviceMesh::group_ranks(MeshAxis axis, int rank) const {
  assert(rank >= 0 && rank < devices_);
  int st = stride(axis);
  int base = rank - coord(rank, axis) * st;
  std::vector<int> out(static_cast<std::size_t>(size(axis)));
  for (int k = 0; k < size(axis); ++k) out[static_cast<std::size_t>(k)] = base + k * st;
  return out;
}

bool operator==(const DeviceMesh& a, const DeviceMesh& b) {
  return a.axes_ == b.axes_ && a.devices_per_node_ == b.devices_per_node_;
}

std::string to_string(const DeviceMesh& mesh) {
  std::string out = "mesh(";
  for (MeshAxis a : mesh.axes()) {
    if (a.index() > 0) out += ',';
    out += fmt::format("{}={}", mesh.name(a), mesh.size(a));
  }
  if (mesh.nodes() > 1) out += fmt::format(";per_node={}", mesh.devices_per_node());
  out += ')';
  return out;
}

Result<DeviceMesh> DeviceMesh::parse(std::string_view text) {
  detail::Cursor c{text};
  auto fail = [&](std::string_view what) {
    return make_error("mesh \"{}\": {} at column {}, found {}", text, what, c.column(), c.peek_desc());
  };
  if (!c.eat_word("mesh")) return fail("expected 'mesh'");
  if (!c.eat('(')) return fail("expected '('");
  std::vector<AxisSpec> axes;
  std::optional<int> per_node;
  if (!c.eat(')')) {
    bool first = true;
    while (true) {
      if (!first && c.eat(';')) {
        if (!c.eat_word("per_node")) return fail("expected 'per_node'");
        if (!c.eat('=')) return fail("expected '='");
        std::size_t at = c.column() - 1;
        auto n = c.integer();
        if (!n || *n < 1 || *n > std::numeric_limits<int>::max()) {
          c.pos = at;
          return fail("expected a node size >= 1");
        }
        per_node = static_cast<int>(*n);
        if (!c.eat(')')) return fail("expected ')'");
        break;
      }
      first = false;
      auto name = c.ident();
      if (!name) return fail("expected an axis name");
      if (!c.eat('=')) return fail("expected '='");
      std::size_t at = c.column() - 1;
      auto n = c.integer();
      if (!n || *n < 1 || *n > std::numeric_limits<int>::max()) {
        c.pos = at;
        return fail("expected an axis size >= 1");
      }
      axes.push_back(AxisSpec{std::string(*name), static_cast<int>(*n)});
      if (c.eat(')')) break;
      if (c.eat(',')) continue;
      if (text.substr(c.pos, 1) == ";") continue;
      return fail("expected ',', ';' or ')'");
    }
  }
  if (!c.at_end()) return fail("unexpected text after ')'");
  auto m = create(std::move(axes), per_node);
  if (!m) return make_error("mesh \"{}\": {}", text, m.error().message);
  return m;
}

}  // namespace planner::layout
