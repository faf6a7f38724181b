#include "planner/layout/tensor_layout.hpp"

#include <algorithm>
#include <cassert>

#include "text.hpp"

namespace planner::layout {

namespace {

std::string shape_string(Shape shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

std::string axis_string(MeshAxis a, const DeviceMesh& mesh) {
  if (a.index() >= 0 && a.index() < mesh.num_axes()) return mesh.name(a);
  return fmt::format("#{}", a.index());
}

}  // namespace

TensorLayout TensorLayout::replicated(int rank) {
  assert(rank >= 0);
  TensorLayout l;
  l.dims_.resize(static_cast<std::size_t>(rank));
  return l;
}

TensorLayout TensorLayout::split(int rank, int dim, MeshAxis axis) {
  return replicated(rank).with_split(dim, axis);
}

TensorLayout TensorLayout::partial(int rank, MeshAxis axis) { return replicated(rank).with_partial(axis); }

TensorLayout TensorLayout::with_split(int dim, MeshAxis axis) const {
  assert(dim >= 0 && dim < rank());
  assert(axis.index() >= 0 && axis.index() < kMaxMeshAxes);
  TensorLayout l = *this;
  l.dims_[static_cast<std::size_t>(dim)].push_back(axis);
  return l;
}

TensorLayout TensorLayout::with_partial(MeshAxis axis) const {
  assert(axis.index() >= 0 && axis.index() < kMaxMeshAxes);
  TensorLayout l = *this;
  l.partial_ |= 1U << axis.index();
  return l;
}

TensorLayout TensorLayout::without(MeshAxis axis) const {
  TensorLayout l = *this;
  if (axis.index() >= 0 && axis.index() < kMaxMeshAxes) l.partial_ &= ~(1U << axis.index());
  for (auto& d : l.dims_) std::erase(d, axis);
  return l;
}

std::vector<MeshAxis> TensorLayout::partial_axes() const {
  std::vector<MeshAxis> out;
  for (int i = 0; i < kMaxMeshAxes; ++i)
    if ((partial_ >> i) & 1U) out.emplace_back(i);
  return out;
}

std::optional<int> TensorLayout::split_dim(MeshAxis axis) const {
  for (int d = 0; d < rank(); ++d)
    for (MeshAxis a : dim_axes(d))
      if (a == axis) return d;
  return std::nullopt;
}

bool TensorLayout::is_replicated() const {
  if (partial_ != 0) return false;
  for (const auto& d : dims_)
    if (!d.empty()) return false;
  return true;
}

Status TensorLayout::validate_structure(const DeviceMesh& mesh) const {
  auto me = [&] { return to_string(*this, mesh); };
  // role[i]: -1 unused, d >= 0 splits dim d, -2 partial.
  std::vector<int> role(static_cast<std::size_t>(mesh.num_axes()), -1);
  for (int d = 0; d < rank(); ++d) {
    for (MeshAxis a : dim_axes(d)) {
      if (a.index() < 0 || a.index() >= mesh.num_axes())
        return make_error("layout {}: dim {} uses mesh axis #{} but {} has {} axes", me(), d, a.index(),
                          to_string(mesh), mesh.num_axes());
      int& r = role[static_cast<std::size_t>(a.index())];
      if (r == d) return make_error("layout {}: mesh axis {} appears twice in dim {}", me(), mesh.name(a), d);
      if (r >= 0)
        return make_error("layout {}: mesh axis {} splits both dim {} and dim {}", me(), mesh.name(a), r, d);
      r = d;
    }
  }
  for (MeshAxis a : partial_axes()) {
    if (a.index() >= mesh.num_axes())
      return make_error("layout {}: partial over mesh axis #{} but {} has {} axes", me(), a.index(),
                        to_string(mesh), mesh.num_axes());
    int r = role[static_cast<std::size_t>(a.index())];
    if (r >= 0)
      return make_error("layout {}: mesh axis {} splits dim {} and is also partial", me(), mesh.name(a), r);
  }
  return Status::success();
}

Status TensorLayout::validate(Shape shape, const DeviceMesh& mesh) const {
  if (static_cast<int>(shape.size()) != rank())
    return make_error("layout {} has rank {} but the tensor has rank {} (shape {})", to_string(*this, mesh),
                      rank(), shape.size(), shape_string(shape));
  PLANNER_TRY_STATUS(validate_structure(mesh));
  for (int d = 0; d < rank(); ++d) {
    std::int64_t n = shard_count(d, mesh);
    std::int64_t size = shape[static_cast<std::size_t>(d)];
    if (size < 0) return make_error("shape {} has a negative dim {}", shape_string(shape), d);
    if (size % n != 0) {
      std::vector<std::string> names;
      for (MeshAxis a : dim_axes(d)) names.push_back(mesh.name(a));
      return make_error("layout {}: dim {} of size {} is not divisible by its {}-way split over {}",
                        to_string(*this, mesh), d, size, n, fmt::join(names, "*"));
    }
  }
  return Status::success();
}

std::int64_t TensorLayout::shard_count(int dim, const DeviceMesh& mesh) const {
  std::int64_t n = 1;
  for (MeshAxis a : dim_axes(dim)) n *= mesh.size(a);
  return n;
}

std::vector<std::int64_t> TensorLayout::local_shape(Shape shape, const DeviceMesh& mesh) const {
  assert(static_cast<int>(shape.size()) == rank());
  std::vector<std::int64_t> out(shape.begin(), shape.end());
  for (int d = 0; d < rank(); ++d) out[static_cast<std::size_t>(d)] /= shard_count(d, mesh);
  return out;
}

Block TensorLayout::local_block(Shape shape, const DeviceMesh& mesh, int rank_id) const {
  Block b;
  b.extent = local_shape(shape, mesh);
  b.offset.assign(b.extent.size(), 0);
  for (int d = 0; d < rank(); ++d) {
    std::int64_t index = 0;
    for (MeshAxis a : dim_axes(d)) index = index * mesh.size(a) + mesh.coord(rank_id, a);
    b.offset[static_cast<std::size_t>(d)] = index * b.extent[static_cast<std::size_t>(d)];
  }
  return b;
}

std::size_t TensorLayout::hash() const {
  // FNV-1a over (rank, per dim: count, axes..., partial mask).
  std::uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](std::uint64_t v) {
    h ^= v;
    h *= 1099511628211ULL;
  };
  mix(dims_.size());
  for (const auto& d : dims_) {
    mix(0x100 + d.size());
    for (MeshAxis a : d) mix(static_cast<std::uint64_t>(a.index()));
  }
  mix(0x10000 + partial_);
  return static_cast<std::size_t>(h);
}

std::string to_string(const TensorLayout& layout, const DeviceMesh& mesh) {
  std::string out = "[";
  for (int d = 0; d < layout.rank(); ++d) {
    if (d > 0) out += ',';
    auto axes = layout.dim_axes(d);
    if (axes.empty()) out += '-';
    for (std::size_t i = 0; i < axes.size(); ++i) {
      if (i > 0) out += '*';
      out += axis_string(axes[i], mesh);
    }
  }
  out += ']';
  auto partial = layout.partial_axes();
  if (!partial.empty()) {
    out += "partial(";
    for (std::size_t i = 0; i < partial.size(); ++i) {
      if (i > 0) out += ',';
      out += axis_string(partial[i], mesh);
    }
    out += ')';
  }
  return out;
}

Result<TensorLayout> parse_layout(std::string_view text, const DeviceMesh& mesh) {
  detail::Cursor c{text};
  auto fail = [&](std::string_view what) {
    return make_error("layout \"{}\": {} at column {}, found {}", text, what, c.column(), c.peek_desc());
  };
  // Column where each axis was first used, to name both uses of a repeat.
  std::vector<std::size_t> used(static_cast<std::size_t>(mesh.num_axes()), 0);
  auto axis = [&]() -> Result<MeshAxis> {
    std::size_t col = c.column();
    auto name = c.ident();
    if (!name) return fail("expected a mesh axis name");
    auto a = mesh.find(*name);
    if (!a)
      return make_error("layout \"{}\": unknown mesh axis \"{}\" at column {} ({})", text, *name, col,
                        to_string(mesh));
    std::size_t& first = used[static_cast<std::size_t>(a->index())];
    if (first != 0)
      return make_error("layout \"{}\": mesh axis {} used again at column {} (first at column {})", text,
                        *name, col, first);
    first = col;
    return *a;
  };

  if (!c.eat('[')) return fail("expected '['");
  std::vector<std::vector<MeshAxis>> dims;
  if (!c.eat(']')) {
    while (true) {
      auto& d = dims.emplace_back();
      if (!c.eat('-')) {
        do {
          PLANNER_TRY(MeshAxis a, axis());
          d.push_back(a);
        } while (c.eat('*'));
      }
      if (c.eat(']')) break;
      if (!c.eat(',')) return fail("expected '*', ',' or ']'");
    }
  }
  TensorLayout l = TensorLayout::replicated(static_cast<int>(dims.size()));
  for (std::size_t d = 0; d < dims.size(); ++d)
    for (MeshAxis a : dims[d]) l = l.with_split(static_cast<int>(d), a);
  if (c.eat_word("partial")) {
    if (!c.eat('(')) return fail("expected '('");
    do {
      PLANNER_TRY(MeshAxis a, axis());
      l = l.with_partial(a);
    } while (c.eat(','));
    if (!c.eat(')')) return fail("expected ',' or ')'");
  }
  if (!c.at_end()) return fail("expected 'partial(' or end of text");
  return l;
}

std::vector<std::int64_t> to_shard_strategy(const TensorLayout& layout, const DeviceMesh& mesh) {
  std::vector<std::int64_t> out;
  for (int d = 0; d < layout.rank(); ++d) out.push_back(layout.shard_count(d, mesh));
  return out;
}

namespace {

// Assigns the mesh axes of size > 1, in mesh order, to a dim or to none, so
// that each dim's product equals its count; stops after two solutions.
void assign_axes(std::span<const std::int64_t> counts, const DeviceMesh& mesh, std::size_t next,
                 std::vector<std::int64_t>& product, TensorLayout& cur, std::vector<TensorLayout>& found) {
  if (found.size() >= 2) return;
  if (next == static_cast<std::size_t>(mesh.num_axes())) {
    if (std::equal(product.begin(), product.end(), counts.begin())) found.push_back(cur);
    return;
  }
  MeshAxis a(static_cast<int>(next));
  int n = mesh.size(a);
  if (n > 1) {
    for (std::size_t d = 0; d < counts.size(); ++d) {
      if (counts[d] % (product[d] * n) != 0) continue;
      product[d] *= n;
      TensorLayout saved = cur;
      cur = cur.with_split(static_cast<int>(d), a);
      assign_axes(counts, mesh, next + 1, product, cur, found);
      cur = std::move(saved);
      product[d] /= n;
    }
  }
  assign_axes(counts, mesh, next + 1, product, cur, found);
}

}  // namespace

Result<TensorLayout> from_shard_strategy(std::span<const std::int64_t> counts, const DeviceMesh& mesh) {
  std::string shown = fmt::format("({})", fmt::join(counts, ","));
  for (std::size_t d = 0; d < counts.size(); ++d)
    if (counts[d] < 1) return make_error("shard strategy {}: dim {} has count {} < 1", shown, d, counts[d]);
  std::vector<std::int64_t> product(counts.size(), 1);
  TensorLayout cur = TensorLayout::replicated(static_cast<int>(counts.size()));
  std::vector<TensorLayout> found;
  assign_axes(counts, mesh, 0, product, cur, found);
  if (found.empty())
    return make_error("shard strategy {}: no assignment of the axes of {} gives these counts", shown,
                      to_string(mesh));
  if (found.size() > 1)
    return make_error("shard strategy {} is ambiguous on {}: {} and {} both give it", shown, to_string(mesh),
                      to_string(found[0], mesh), to_string(found[1], mesh));
  return found[0];
}

}  // namespace planner::layout
