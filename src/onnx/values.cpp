// Element types, shapes, small-tensor values and RuleCtx accessors.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "infer.hpp"

namespace planner::onnx::detail {

bool is_float_elem(int e) {
  return e == kFloat || e == kFloat16 || e == kDouble || e == kBfloat16 || (e >= 17 && e <= 20);
}

std::optional<core::DType> to_dtype(int e) {
  using core::DType;
  switch (e) {
    case kFloat: return DType::f32;
    case kUint8: return DType::u8;
    case kInt8: return DType::i8;
    case kUint16: return DType::u16;
    case kInt16: return DType::i16;
    case kInt32: return DType::i32;
    case kInt64: return DType::i64;
    case kString: return DType::string;
    case kBool: return DType::boolean;
    case kFloat16: return DType::f16;
    case kDouble: return DType::f64;
    case kUint32: return DType::u32;
    case kUint64: return DType::u64;
    case kComplex64: return DType::c64;
    case kComplex128: return DType::c128;
    case kBfloat16: return DType::bf16;
    case 17: case 18: case 19: case 20: return DType::f8;
    default: return std::nullopt;
  }
}

std::string_view elem_name(int e) {
  if (auto d = to_dtype(e)) return core::dtype_name(*d);
  return "undefined";
}

// ---------------------------------------------------------------------------

std::int64_t Values::n(std::size_t k) const {
  if (!is_float) return i[k];
  double x = f[k];
  if (std::isnan(x)) return 0;
  if (x >= 9.2e18) return std::numeric_limits<std::int64_t>::max();
  if (x <= -9.2e18) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(x);
}

Values Values::ints(std::vector<std::int64_t> v) {
  Values r;
  r.i = std::move(v);
  return r;
}

Values Values::floats(std::vector<double> v) {
  Values r;
  r.is_float = true;
  r.f = std::move(v);
  return r;
}

Values Values::cast_to(int elem) const {
  if (is_float_elem(elem)) {
    if (is_float) return *this;
    std::vector<double> v(i.begin(), i.end());
    return floats(std::move(v));
  }
  std::vector<std::int64_t> v(size());
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = elem == kBool ? (d(k) != 0.0 ? 1 : 0) : n(k);
  return ints(std::move(v));
}

std::vector<std::int64_t> Values::as_ints() const {
  if (!is_float) return i;
  std::vector<std::int64_t> v(f.size());
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = n(k);
  return v;
}

// ---------------------------------------------------------------------------

std::optional<std::int64_t> checked_numel(const Shape& s) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 62;
  std::int64_t n = 1;
  for (auto d : s) {
    if (d < 0) return std::nullopt;
    if (d == 0) return 0;  // still check the rest for negatives
    if (n > kLimit / d) {
      for (auto e : s)
        if (e == 0) return 0;
      return std::nullopt;
    }
    n *= d;
  }
  return n;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (std::size_t k = 0; k < r; ++k) {
    std::int64_t x = k + a.size() >= r ? a[k + a.size() - r] : 1;
    std::int64_t y = k + b.size() >= r ? b[k + b.size() - r] : 1;
    if (x == y || y == 1) out[k] = x;
    else if (x == 1) out[k] = y;
    else return std::nullopt;
  }
  return out;
}

std::optional<std::size_t> norm_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(s.size(), 1);
  for (std::size_t k = s.size(); k-- > 1;) st[k - 1] = st[k] * s[k];
  return st;
}

Values broadcast_values(const Values& v, const Shape& from, const Shape& to) {
  auto n = checked_numel(to).value_or(0);
  Values out;
  out.is_float = v.is_float;
  if (v.is_float) out.f.resize(static_cast<std::size_t>(n));
  else out.i.resize(static_cast<std::size_t>(n));
  const auto st_to = strides_of(to);
  const auto st_from = strides_of(from);
  const std::size_t off = to.size() - from.size();
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t rem = k, src = 0;
    for (std::size_t ax = 0; ax < to.size(); ++ax) {
      std::int64_t idx = rem / st_to[ax];
      rem %= st_to[ax];
      if (ax >= off && from[ax - off] != 1) src += idx * st_from[ax - off];
    }
    if (v.is_float) out.f[k] = v.f[src];
    else out.i[k] = v.i[src];
  }
  return out;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (std::size_t k = 0; k < s.size(); ++k) {
    if (k) r += ",";
    r += std::to_string(s[k]);
  }
  return r + "]";
}

Result<Shape> tensor_shape(const pb::TensorProto& t) {
  Shape s(t.dims().begin(), t.dims().end());
  for (auto d : s)
    if (d < 0 || d > kMaxDim)
      return make_error("tensor '{}' has dim {} (outside 0..2^40)", t.name(), d);
  if (!checked_numel(s)) return make_error("tensor '{}' has too many elements {}", t.name(), shape_str(s));
  return s;
}

namespace {

template <typename T>
T load(const std::string& raw, std::size_t k) {
  T v;
  std::memcpy(&v, raw.data() + k * sizeof(T), sizeof(T));
  return v;
}

double half_to_double(std::uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(mant, -24);
  else if (exp == 31) v = mant ? std::nan("") : std::numeric_limits<double>::infinity();
  else v = std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

double bf16_to_double(std::uint16_t h) {
  std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::size_t elem_bytes(int e) {
  switch (e) {
    case kInt64: case kUint64: case kDouble: return 8;
    case kInt32: case kUint32: case kFloat: return 4;
    case kInt16: case kUint16: case kFloat16: case kBfloat16: return 2;
    case kInt8: case kUint8: case kBool: return 1;
    default: return 0;
  }
}

}  // namespace

std::optional<Values> tensor_values(const pb::TensorProto& t, std::size_t cap) {
  if (t.data_location() == pb::TensorProto::EXTERNAL) return std::nullopt;
  Shape s(t.dims().begin(), t.dims().end());
  auto numel = checked_numel(s);
  if (!numel || static_cast<std::uint64_t>(*numel) > cap) return std::nullopt;
  const auto n = static_cast<std::size_t>(*numel);
  const int e = t.data_type();
  const bool fl = is_float_elem(e);
  Values v;
  v.is_float = fl;
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    const std::size_t eb = elem_bytes(e);
    if (eb == 0 || raw.size() != n * eb) return std::nullopt;
    for (std::size_t k = 0; k < n; ++k) {
      switch (e) {
        case kInt64: v.i.push_back(load<std::int64_t>(raw, k)); break;
        case kUint64: v.i.push_back(static_cast<std::int64_t>(load<std::uint64_t>(raw, k))); break;
        case kInt32: v.i.push_back(load<std::int32_t>(raw, k)); break;
        case kUint32: v.i.push_back(load<std::uint32_t>(raw, k)); break;
        case kInt16: v.i.push_back(load<std::int16_t>(raw, k)); break;
        case kUint16: v.i.push_back(load<std::uint16_t>(raw, k)); break;
        case kInt8: v.i.push_back(load<std::int8_t>(raw, k)); break;
        case kUint8: case kBool: v.i.push_back(load<std::uint8_t>(raw, k)); break;
        case kFloat: v.f.push_back(load<float>(raw, k)); break;
        case kDouble: v.f.push_back(load<double>(raw, k)); break;
        case kFloat16: v.f.push_back(half_to_double(load<std::uint16_t>(raw, k))); break;
        case kBfloat16: v.f.push_back(bf16_to_double(load<std::uint16_t>(raw, k))); break;
        default: return std::nullopt;
      }
    }
    return v;
  }
  switch (e) {
    case kInt64:
      if (static_cast<std::size_t>(t.int64_data_size()) != n) return std::nullopt;
      v.i.assign(t.int64_data().begin(), t.int64_data().end());
      return v;
    case kUint64: case kUint32:
      if (static_cast<std::size_t>(t.uint64_data_size()) != n) return std::nullopt;
      for (auto x : t.uint64_data()) v.i.push_back(static_cast<std::int64_t>(x));
      return v;
    case kInt32: case kInt16: case kInt8: case kUint8: case kUint16: case kBool:
      if (static_cast<std::size_t>(t.int32_data_size()) != n) return std::nullopt;
      v.i.assign(t.int32_data().begin(), t.int32_data().end());
      return v;
    case kFloat16: case kBfloat16:
      if (static_cast<std::size_t>(t.int32_data_size()) != n) return std::nullopt;
      for (auto x : t.int32_data())
        v.f.push_back(e == kFloat16 ? half_to_double(static_cast<std::uint16_t>(x))
                                    : bf16_to_double(static_cast<std::uint16_t>(x)));
      return v;
    case kFloat:
      if (static_cast<std::size_t>(t.float_data_size()) != n) return std::nullopt;
      v.f.assign(t.float_data().begin(), t.float_data().end());
      return v;
    case kDouble:
      if (static_cast<std::size_t>(t.double_data_size()) != n) return std::nullopt;
      v.f.assign(t.double_data().begin(), t.double_data().end());
      return v;
    default:
      return std::nullopt;
  }
}

// ---------------------------------------------------------------------------
// RuleCtx

std::optional<std::vector<std::int64_t>> RuleCtx::ints(std::size_t i) const {
  if (auto* v = vals(i)) return v->as_ints();
  return std::nullopt;
}

std::optional<std::int64_t> RuleCtx::scalar(std::size_t i) const {
  auto* v = vals(i);
  if (!v || v->size() != 1) return std::nullopt;
  return v->n(0);
}

const pb::AttributeProto* RuleCtx::attr(std::string_view name) const {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::optional<std::int64_t> RuleCtx::attr_i(std::string_view name) const {
  auto* a = attr(name);
  if (!a) return std::nullopt;
  if (a->type() == pb::AttributeProto::INT || a->has_i()) return a->i();
  if (a->type() == pb::AttributeProto::FLOAT) return static_cast<std::int64_t>(a->f());
  return std::nullopt;
}

std::int64_t RuleCtx::attr_i(std::string_view name, std::int64_t def) const {
  return attr_i(name).value_or(def);
}

std::optional<std::vector<std::int64_t>> RuleCtx::attr_ints(std::string_view name) const {
  auto* a = attr(name);
  if (!a) return std::nullopt;
  if (a->ints_size() > 0 || a->type() == pb::AttributeProto::INTS)
    return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
  if (a->type() == pb::AttributeProto::INT) return std::vector<std::int64_t>{a->i()};
  return std::nullopt;
}

std::optional<double> RuleCtx::attr_f(std::string_view name) const {
  auto* a = attr(name);
  if (!a) return std::nullopt;
  if (a->type() == pb::AttributeProto::INT) return static_cast<double>(a->i());
  return a->f();
}

std::optional<std::vector<double>> RuleCtx::attr_floats(std::string_view name) const {
  auto* a = attr(name);
  if (!a) return std::nullopt;
  if (a->floats_size() > 0 || a->type() == pb::AttributeProto::FLOATS)
    return std::vector<double>(a->floats().begin(), a->floats().end());
  if (a->ints_size() > 0) return std::vector<double>(a->ints().begin(), a->ints().end());
  return std::nullopt;
}

std::optional<std::string> RuleCtx::attr_s(std::string_view name) const {
  auto* a = attr(name);
  if (!a) return std::nullopt;
  return a->s();
}

const pb::TensorProto* RuleCtx::attr_t(std::string_view name) const {
  auto* a = attr(name);
  return a && a->has_t() ? &a->t() : nullptr;
}

const pb::GraphProto* RuleCtx::attr_g(std::string_view name) const {
  auto* a = attr(name);
  return a && a->has_g() ? &a->g() : nullptr;
}

void RuleCtx::set(std::size_t k, Shape s, int elem) {
  if (k >= out.size()) return;
  out[k].shape = std::move(s);
  out[k].elem = elem;
}

void RuleCtx::same_as(std::size_t k, std::size_t i, int elem) {
  if (!has(i)) return;
  set(k, shape(i), elem == kUndefined ? this->elem(i) : elem);
}

void RuleCtx::set_values(std::size_t k, Values v) {
  if (k >= out.size() || !out[k].shape) return;
  auto n = checked_numel(*out[k].shape);
  if (!n || static_cast<std::size_t>(*n) != v.size() || v.size() > kMaxTracked) return;
  out[k].values = std::move(v);
}

// ---------------------------------------------------------------------------
// Registry

namespace {

struct RuleTable {
  std::unordered_map<std::string, const ShapeRule*> by_key;
  RuleTable() {
    for (auto family : {elementwise_rules(), matmul_rules(), conv_rules(), layout_rules(), index_rules(),
                        reduce_rules(), generator_rules(), contrib_rules(), legacy_rules(), control_rules(),
                        sequence_rules()})
      for (const auto& r : family) by_key.emplace(key(r.domain, r.type), &r);
  }
  static std::string key(std::string_view domain, std::string_view type) {
    std::string k(domain);
    k += '\x1f';
    k += type;
    return k;
  }
  const ShapeRule* find(std::string_view domain, std::string_view type) const {
    auto it = by_key.find(key(domain, type));
    return it == by_key.end() ? nullptr : it->second;
  }
};

}  // namespace

const ShapeRule* find_shape_rule(std::string_view domain, std::string_view type) {
  static const RuleTable table;
  if (domain == "ai.onnx") domain = "";
  if (auto* r = table.find(domain, type)) return r;
  if (!domain.empty())
    if (auto* r = table.find("", type)) return r;
  if (domain != "com.microsoft") return table.find("com.microsoft", type);
  return nullptr;
}

}  // namespace planner::onnx::detail
