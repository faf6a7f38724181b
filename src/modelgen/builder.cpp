#include "builder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace planner::modelgen::detail {

onnx::AttributeProto attr(const std::string& name, std::int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto attr(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

onnx::AttributeProto attr(const std::string& name, const Dims& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a.add_ints(x);
  return a;
}

onnx::AttributeProto attr(const std::string& name, const std::string& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}

onnx::AttributeProto attr(const std::string& name, const onnx::TensorProto& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = v;
  return a;
}

std::string param_name(const std::string& scope) {
  std::string s = scope;
  for (auto& c : s)
    if (c == '/') c = '.';
  return s;
}

namespace {

void set_type(onnx::ValueInfoProto& vi, int elem_type, const Dims& dims) {
  auto* t = vi.mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  auto* shape = t->mutable_shape();
  for (auto d : dims) shape->add_dim()->set_dim_value(d);
}

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, deterministic.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in (0, 1].
  double uniform() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }
};

/// Fills `n` floats with N(0, 0.02^2) by Box-Muller.
void fill_normal(SplitMix64& rng, float* out, std::int64_t n) {
  constexpr double kStd = 0.02;
  constexpr double kTwoPi = 6.283185307179586;
  std::int64_t i = 0;
  for (; i + 1 < n; i += 2) {
    double r = std::sqrt(-2.0 * std::log(rng.uniform())) * kStd;
    double t = kTwoPi * rng.uniform();
    out[i] = static_cast<float>(r * std::cos(t));
    out[i + 1] = static_cast<float>(r * std::sin(t));
  }
  if (i < n) {
    double r = std::sqrt(-2.0 * std::log(rng.uniform())) * kStd;
    out[i] = static_cast<float>(r * std::cos(kTwoPi * rng.uniform()));
  }
}

std::int64_t numel(const Dims& dims, bool& overflow) {
  std::int64_t n = 1;
  for (auto d : dims)
    if (__builtin_mul_overflow(n, d, &n)) overflow = true;
  return n;
}

}  // namespace

Builder::Builder(std::string data_location, bool with_weights, std::uint64_t seed)
    : data_location_(std::move(data_location)), with_weights_(with_weights), seed_(seed) {}

std::string Builder::input(const std::string& name, int elem_type, const Dims& dims) {
  set_type(*graph_.add_input(), elem_type, dims);
  graph_.mutable_input(graph_.input_size() - 1)->set_name(name);
  return name;
}

void Builder::output(const std::string& name, int elem_type, const Dims& dims) {
  auto* vi = graph_.add_output();
  vi->set_name(name);
  set_type(*vi, elem_type, dims);
}

std::string Builder::weight(const std::string& name, const Dims& dims, Init init) {
  auto* t = graph_.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t->add_dims(d);
  std::int64_t n = numel(dims, overflow_);
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(n, std::int64_t{4}, &bytes)) overflow_ = true;
  if (__builtin_add_overflow(parameter_count_, n, &parameter_count_)) overflow_ = true;
  if (!with_weights_) {
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* key, const std::string& value) {
      auto* e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", data_location_);
    add("offset", std::to_string(offset_));
    add("length", std::to_string(bytes));
  }
  if (__builtin_add_overflow(offset_, bytes, &offset_)) overflow_ = true;
  inits_.push_back(init);
  return name;
}

std::string Builder::weight_of(const std::string& scope, const char* suffix, const Dims& dims,
                               Init init) {
  return weight(param_name(scope) + suffix, dims, init);
}

std::string Builder::ints(const Dims& dims, const std::vector<std::int64_t>& values,
                          const std::string& name) {
  std::string key = name;
  if (key.empty()) {
    key = fmt::format("const.i64.{}", fmt::join(dims, "x"));
    if (values.size() <= 8) {
      key += fmt::format(".{}", fmt::join(values, "_"));
    } else {
      // FNV-1a over the values: a stable, short name for a long table.
      std::uint64_t h = 1469598103934665603ull;
      for (auto v : values) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ull;
      key += fmt::format(".h{:016x}", h);
    }
    for (auto& c : key)
      if (c == '-') c = 'm';
  }
  if (auto it = int_cache_.find(key); it != int_cache_.end()) return it->second;
  auto* t = graph_.add_initializer();
  t->set_name(key);
  t->set_data_type(onnx::TensorProto::INT64);
  for (auto d : dims) t->add_dims(d);
  std::string raw(values.size() * sizeof(std::int64_t), '\0');
  std::memcpy(raw.data(), values.data(), raw.size());  // little-endian host, as ONNX requires
  t->set_raw_data(std::move(raw));
  int_cache_.emplace(key, key);
  return key;
}

std::string Builder::constant(const std::string& name, const Dims& dims,
                              const std::vector<float>& values) {
  if (auto it = const_cache_.find(name); it != const_cache_.end()) return it->second;
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  std::string raw(values.size() * sizeof(float), '\0');
  std::memcpy(raw.data(), values.data(), raw.size());
  t.set_raw_data(std::move(raw));
  onnx::NodeProto n;
  n.set_op_type("Constant");
  n.set_name("const/" + name);
  n.add_output(name);
  *n.add_attribute() = attr("value", t);
  prologue_.push_back(std::move(n));
  const_cache_.emplace(name, name);
  return name;
}

std::vector<std::string> Builder::node(const std::string& scope, const std::string& type,
                                       const std::vector<std::string>& inputs, int num_outputs,
                                       std::vector<onnx::AttributeProto> attrs) {
  std::string name = scope.empty() ? type : scope + "/" + type;
  int& uses = node_names_[name];
  if (uses > 0) name += fmt::format("_{}", uses);
  ++uses;
  onnx::NodeProto n;
  n.set_op_type(type);
  n.set_name(name);
  for (const auto& in : inputs) n.add_input(in);
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) {
    outs.push_back(fmt::format("{}_output_{}", name, i));
    n.add_output(outs.back());
  }
  for (auto& a : attrs) *n.add_attribute() = std::move(a);
  body_.push_back(std::move(n));
  return outs;
}

std::string Builder::rename_last_output(const std::string& from, const std::string& to) {
  auto& n = body_.back();
  for (auto& o : *n.mutable_output())
    if (o == from) o = to;
  return to;
}

void Builder::finish(onnx::ModelProto& model) {
  auto* g = model.mutable_graph();
  g->Swap(&graph_);
  g->mutable_node()->Reserve(static_cast<int>(prologue_.size() + body_.size()));
  for (auto& n : prologue_) *g->add_node() = std::move(n);
  for (auto& n : body_) *g->add_node() = std::move(n);
  prologue_.clear();
  body_.clear();
  if (!with_weights_) return;
  SplitMix64 rng{seed_};
  std::size_t k = 0;
  for (auto& t : *g->mutable_initializer()) {
    if (t.data_type() != onnx::TensorProto::FLOAT) continue;
    std::int64_t n = 1;
    for (auto d : t.dims()) n *= d;
    std::vector<float> v(static_cast<std::size_t>(n), 0.0f);
    switch (inits_[k++]) {
      case Init::normal: fill_normal(rng, v.data(), n); break;
      case Init::ones: std::fill(v.begin(), v.end(), 1.0f); break;
      case Init::zeros: break;
    }
    std::string raw(v.size() * sizeof(float), '\0');
    std::memcpy(raw.data(), v.data(), raw.size());
    t.set_raw_data(std::move(raw));
  }
}

}  // namespace planner::modelgen::detail
