#include "planner/modelgen/modelgen.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "builder.hpp"
#include "layers.hpp"

namespace planner::modelgen {

namespace {

constexpr std::array<std::pair<Arch, const char*>, 9> kArchNames{{
    {Arch::gpt, "gpt"}, {Arch::llama, "llama"}, {Arch::bert, "bert"}, {Arch::t5, "t5"}, {Arch::moe, "moe"},
    {Arch::llama_moe, "llama-moe"}, {Arch::mlp, "mlp"}, {Arch::resnet, "resnet"}, {Arch::widedeep, "widedeep"},
}};

}  // namespace

Result<Arch> parse_arch(const std::string& name) {
  for (auto [a, n] : kArchNames)
    if (name == n) return a;
  return make_error("unknown architecture '{}' (known: gpt, llama, bert, t5, moe, llama-moe, mlp, resnet, widedeep)", name);
}

std::string arch_name(Arch a) {
  for (auto [x, n] : kArchNames)
    if (x == a) return n;
  return "?";
}

std::vector<Arch> all_archs() {
  std::vector<Arch> v;
  for (auto [a, n] : kArchNames) v.push_back(a);
  return v;
}

std::vector<std::string_view> arch_options(Arch a) {
  switch (a) {
    case Arch::gpt: return {"layers", "hidden", "heads", "ffn", "seq", "vocab", "batch"};
    case Arch::llama: return {"layers", "hidden", "heads", "kv-heads", "head-dim", "ffn", "seq", "vocab", "batch"};
    case Arch::bert: return {"layers", "hidden", "heads", "ffn", "seq", "vocab", "batch"};
    case Arch::t5: return {"layers", "decoder-layers", "hidden", "heads", "ffn", "seq", "vocab", "batch"};
    case Arch::moe: return {"layers", "hidden", "heads", "ffn", "seq", "vocab", "batch", "experts", "top-k"};
    case Arch::llama_moe:
      return {"layers", "hidden", "heads", "kv-heads", "head-dim", "ffn", "seq", "vocab", "batch", "experts", "top-k"};
    case Arch::mlp: return {"layers", "width", "batch"};
    case Arch::resnet: return {"depth", "image", "classes", "batch"};
    case Arch::widedeep: return {"rows", "dim", "fields", "dense-features", "batch"};
  }
  return {};
}

std::int64_t effective_ffn(const ModelSpec& s) {
  if (s.ffn > 0) return s.ffn;
  if (s.arch == Arch::llama || s.arch == Arch::llama_moe) {
    // 2/3 of 4h (SwiGLU keeps the MLP's parameters), rounded up to 256: 4096 -> 11008.
    return (8 * s.hidden + 3 * 256 - 1) / (3 * 256) * 256;
  }
  return 4 * s.hidden;
}

std::int64_t head_size(const ModelSpec& s) { return s.head_dim > 0 ? s.head_dim : s.hidden / s.heads; }

std::int64_t moe_capacity(const ModelSpec& s) {
  const std::int64_t routed = s.batch * s.seq * s.top_k;
  return (routed + s.experts - 1) / s.experts;
}

namespace {

Status in_range(const char* opt, std::int64_t v, std::int64_t lo, std::int64_t hi) {
  if (v < lo) {
    if (lo == 1) return make_error("--{} {} must be positive", opt, v);
    return make_error("--{} {} must be at least {}", opt, v, lo);
  }
  if (v > hi) return make_error("--{} {} is too large (at most {})", opt, v, hi);
  return Status::success();
}

/// Largest single activation we let a model declare: 2^50 elements (4 PiB
/// of float) keeps every byte count well inside int64.
constexpr std::int64_t kMaxElems = std::int64_t{1} << 50;

Status check_elems(const char* what, const char* options, std::initializer_list<std::int64_t> dims) {
  __int128 p = 1;
  for (auto d : dims) {
    p *= d;
    if (p > kMaxElems)
      return make_error("{} would exceed 2^50 elements; reduce {}", what, options);
  }
  return Status::success();
}

Status validate_transformer(const ModelSpec& s) {
  PLANNER_TRY_STATUS(in_range("layers", s.layers, 1, 4096));
  PLANNER_TRY_STATUS(in_range("hidden", s.hidden, 1, std::int64_t{1} << 20));
  PLANNER_TRY_STATUS(in_range("heads", s.heads, 1, std::int64_t{1} << 16));
  if (s.head_dim != 0) PLANNER_TRY_STATUS(in_range("head-dim", s.head_dim, 1, std::int64_t{1} << 16));
  if (s.head_dim == 0 && s.hidden % s.heads != 0)
    return make_error("--hidden {} is not divisible by --heads {}", s.hidden, s.heads);
  if (s.ffn != 0) PLANNER_TRY_STATUS(in_range("ffn", s.ffn, 1, std::int64_t{1} << 22));
  PLANNER_TRY_STATUS(in_range("seq", s.seq, 1, std::int64_t{1} << 20));
  PLANNER_TRY_STATUS(in_range("vocab", s.vocab, 1, std::int64_t{1} << 24));
  const std::int64_t widest = std::max({effective_ffn(s), 3 * s.hidden, 3 * s.heads * head_size(s), s.vocab});
  PLANNER_TRY_STATUS(check_elems("the attention scores (batch x heads x seq x seq)", "--batch, --heads or --seq",
                                 {s.batch, s.heads, s.seq, s.seq}));
  PLANNER_TRY_STATUS(check_elems("the widest activation (batch x seq x max(ffn, 3 hidden, vocab))",
                                 "--batch, --seq, --ffn, --hidden or --vocab", {s.batch, s.seq, widest}));
  return Status::success();
}

Status validate_llama(const ModelSpec& s) {
  PLANNER_TRY_STATUS(validate_transformer(s));
  if (s.kv_heads != 0) {
    PLANNER_TRY_STATUS(in_range("kv-heads", s.kv_heads, 1, s.heads));
    if (s.heads % s.kv_heads != 0)
      return make_error("--heads {} is not divisible by --kv-heads {}", s.heads, s.kv_heads);
  }
  if (s.head_dim != 0 && s.head_dim % 2 != 0)
    return make_error("--head-dim {} is odd; rotary embedding needs an even head size", s.head_dim);
  if (s.head_dim == 0 && (s.hidden / s.heads) % 2 != 0)
    return make_error("--hidden {} / --heads {} = {} is odd; rotary embedding needs an even head size",
                      s.hidden, s.heads, s.hidden / s.heads);
  return Status::success();
}

}  // namespace

Status validate(const ModelSpec& s) {
  PLANNER_TRY_STATUS(in_range("batch", s.batch, 1, std::int64_t{1} << 20));
  switch (s.arch) {
    case Arch::gpt:
    case Arch::bert:
      return validate_transformer(s);
    case Arch::llama:
      return validate_llama(s);
    case Arch::t5:
      PLANNER_TRY_STATUS(validate_transformer(s));
      return in_range("decoder-layers", s.decoder_layers, 0, 4096);
    case Arch::moe:
    case Arch::llama_moe: {
      PLANNER_TRY_STATUS(s.arch == Arch::moe ? validate_transformer(s) : validate_llama(s));
      PLANNER_TRY_STATUS(in_range("experts", s.experts, 1, 1024));
      PLANNER_TRY_STATUS(in_range("top-k", s.top_k, 1, 1 << 20));
      if (s.top_k > s.experts)
        return make_error("--top-k {} is larger than --experts {}", s.top_k, s.experts);
      if (std::int64_t{s.layers} * s.experts > 65536)
        return make_error("--layers {} x --experts {} = {} expert blocks is too many (at most 65536)",
                          s.layers, s.experts, std::int64_t{s.layers} * s.experts);
      return Status::success();
    }
    case Arch::mlp:
      PLANNER_TRY_STATUS(in_range("layers", s.layers, 1, 4096));
      return in_range("width", s.width, 1, std::int64_t{1} << 20);
    case Arch::resnet:
      if (detail::resnet_stages(s.depth).empty())
        return make_error("--depth {} is not one of 50, 101, 152", s.depth);
      PLANNER_TRY_STATUS(in_range("image", s.image, 32, 8192));
      PLANNER_TRY_STATUS(in_range("classes", s.classes, 1, std::int64_t{1} << 24));
      return check_elems("the stem activation (batch x 64 x (image/2)^2)", "--batch or --image",
                         {s.batch, 64, s.image / 2, s.image / 2});
    case Arch::widedeep:
      PLANNER_TRY_STATUS(in_range("rows", s.rows, 1, std::int64_t{1} << 40));
      PLANNER_TRY_STATUS(in_range("dim", s.dim, 1, std::int64_t{1} << 16));
      PLANNER_TRY_STATUS(in_range("fields", s.fields, 1, std::int64_t{1} << 16));
      PLANNER_TRY_STATUS(in_range("dense-features", s.dense_features, 0, std::int64_t{1} << 20));
      PLANNER_TRY_STATUS(check_elems("the input to the deep part (batch x (fields x dim + dense-features))",
                                     "--batch, --fields or --dim", {s.batch, s.fields * s.dim + s.dense_features, 1024}));
      return check_elems("the embedding table (rows x dim)", "--rows or --dim", {s.rows, s.dim});
  }
  return make_error("unknown architecture");
}

namespace {

/// "layers=96 hidden=12288 ..." with the values the arch reads (defaults resolved).
std::string spec_text(const ModelSpec& s) {
  std::string out;
  for (auto opt : arch_options(s.arch)) {
    std::int64_t v = 0;
    if (opt == "layers") v = s.layers;
    else if (opt == "hidden") v = s.hidden;
    else if (opt == "heads") v = s.heads;
    else if (opt == "kv-heads") v = s.kv_heads > 0 ? s.kv_heads : s.heads;
    else if (opt == "head-dim") v = head_size(s);
    else if (opt == "ffn") v = effective_ffn(s);
    else if (opt == "seq") v = s.seq;
    else if (opt == "vocab") v = s.vocab;
    else if (opt == "batch") v = s.batch;
    else if (opt == "experts") v = s.experts;
    else if (opt == "top-k") v = s.top_k;
    else if (opt == "decoder-layers") v = s.decoder_layers > 0 ? s.decoder_layers : s.layers;
    else if (opt == "width") v = s.width;
    else if (opt == "depth") v = s.depth;
    else if (opt == "image") v = s.image;
    else if (opt == "classes") v = s.classes;
    else if (opt == "rows") v = s.rows;
    else if (opt == "dim") v = s.dim;
    else if (opt == "fields") v = s.fields;
    else if (opt == "dense-features") v = s.dense_features;
    if (!out.empty()) out += ' ';
    out += fmt::format("{}={}", opt, v);
  }
  if (s.arch == Arch::moe || s.arch == Arch::llama_moe) out += fmt::format(" capacity={}", moe_capacity(s));
  return out;
}

void add_meta(onnx::ModelProto& m, const std::string& key, const std::string& value) {
  auto* p = m.add_metadata_props();
  p->set_key(key);
  p->set_value(value);
}

}  // namespace

Result<BuiltModel> build(const ModelSpec& spec, const std::string& data_location) {
  PLANNER_TRY_STATUS(validate(spec));
  detail::Builder b(data_location, spec.with_weights, spec.seed);
  switch (spec.arch) {
    case Arch::gpt: detail::build_gpt(b, spec); break;
    case Arch::llama: detail::build_llama(b, spec); break;
    case Arch::bert: detail::build_bert(b, spec); break;
    case Arch::t5: detail::build_t5(b, spec); break;
    case Arch::moe: detail::build_moe(b, spec); break;
    case Arch::llama_moe: detail::build_llama_moe(b, spec); break;
    case Arch::mlp: detail::build_mlp(b, spec); break;
    case Arch::resnet: detail::build_resnet(b, spec); break;
    case Arch::widedeep: detail::build_widedeep(b, spec); break;
  }
  if (b.overflowed())
    return make_error("{}: the parameter bytes overflow 64 bits; reduce the sizes", arch_name(spec.arch));
  if (spec.with_weights && b.parameter_count() > kMaxInlineParameters)
    return make_error("--with-weights: {} has {} parameters, more than the {} (2^28) written inline; "
                      "drop --with-weights to declare external data instead",
                      arch_name(spec.arch), b.parameter_count(), kMaxInlineParameters);

  BuiltModel out;
  out.parameter_count = b.parameter_count();
  out.parameter_bytes = 4 * b.parameter_count();
  out.node_count = b.node_count();
  out.initializer_count = b.initializer_count();

  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  m.set_producer_name("planner");
  m.set_producer_version("0.1.0");
  m.set_doc_string(fmt::format("planner model {}: shape-only training graph ending in its loss", arch_name(spec.arch)));
  add_meta(m, "planner.arch", arch_name(spec.arch));
  add_meta(m, "planner.spec", spec_text(spec));
  add_meta(m, "planner.weights", spec.with_weights
                                     ? fmt::format("inline random N(0, 0.02^2), seed {}", spec.seed)
                                     : fmt::format("external data {} (not written)", data_location));
  b.finish(m);
  m.mutable_graph()->set_name(arch_name(spec.arch));

  {
    google::protobuf::io::StringOutputStream zs(&out.bytes);
    google::protobuf::io::CodedOutputStream cs(&zs);
    cs.SetSerializationDeterministic(true);
    if (!m.SerializeToCodedStream(&cs))
      return make_error("{}: cannot serialize the model (is it over 2 GiB?)", arch_name(spec.arch));
  }
  return out;
}

Result<std::string> build_model(const ModelSpec& spec, const std::string& data_location) {
  PLANNER_TRY(auto built, build(spec, data_location));
  return std::move(built.bytes);
}

}  // namespace planner::modelgen
