// Shared pieces of the exporters: versions, the pipeline cut, rank order,
// Megatron's tensor-parallel patterns, comment blocks, number text.

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal.hpp"

namespace planner::exporters {

namespace {
// Default first. Each version's option names are in tests/exporters/names/<framework>.tsv.
constexpr std::array<std::string_view, 2> kMegatron{"core_v0.12.0", "core_v0.8.0"};
constexpr std::array<std::string_view, 1> kDeepSpeed{"v0.16.9"};
constexpr std::array<std::string_view, 1> kTorchtitan{"v0.2.2"};
constexpr std::array<std::string_view, 1> kMindSpore{"r2.4.0"};

/// Mesh axes named in a layout dim ("dp*tp" -> {dp, tp}).
std::vector<std::string> dim_axes(std::string_view dim) {
  std::vector<std::string> out;
  if (dim == "-" || dim.empty()) return out;
  std::size_t start = 0;
  while (start <= dim.size()) {
    const auto star = dim.find('*', start);
    out.emplace_back(dim.substr(start, star == std::string_view::npos ? std::string_view::npos : star - start));
    if (star == std::string_view::npos) break;
    start = star + 1;
  }
  return out;
}

/// The dims of a layout text "[dp,-,tp]partial(tp)" (without the partial part).
std::vector<std::string> layout_dims(std::string_view text) {
  std::vector<std::string> out;
  const auto open = text.find('['), close = text.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return out;
  const auto body = text.substr(open + 1, close - open - 1);
  if (body.empty()) return out;
  std::size_t start = 0;
  while (true) {
    const auto comma = body.find(',', start);
    out.emplace_back(body.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool has_axis(std::string_view dim, std::string_view axis) {
  for (const auto& a : dim_axes(dim))
    if (a == axis) return true;
  return false;
}
}  // namespace

Result<Framework> parse_framework(std::string_view name) {
  if (name == "megatron") return Framework::megatron;
  if (name == "deepspeed") return Framework::deepspeed;
  if (name == "torchtitan") return Framework::torchtitan;
  if (name == "mindspore") return Framework::mindspore;
  return make_error("unknown framework '{}' (expected megatron, deepspeed, torchtitan or mindspore)", name);
}

std::string_view framework_name(Framework f) {
  switch (f) {
    case Framework::megatron: return "megatron";
    case Framework::deepspeed: return "deepspeed";
    case Framework::torchtitan: return "torchtitan";
    case Framework::mindspore: return "mindspore";
  }
  return "?";
}

std::span<const std::string_view> versions(Framework f) {
  switch (f) {
    case Framework::megatron: return kMegatron;
    case Framework::deepspeed: return kDeepSpeed;
    case Framework::torchtitan: return kTorchtitan;
    case Framework::mindspore: return kMindSpore;
  }
  return {};
}

Result<Export> export_plan(const plan::Plan& plan, Framework f, const Options& options) {
  switch (f) {
    case Framework::megatron: return to_megatron(plan, options);
    case Framework::deepspeed: return to_deepspeed(plan, options);
    case Framework::torchtitan: return to_torchtitan(plan, options);
    case Framework::mindspore: return to_mindspore(plan, options);
  }
  return make_error("unknown framework");
}

std::string beyond_megatron(const plan::OpStrategy& s, bool sequence_parallel) {
  if (s.assignment.empty()) return {};
  // "tp:n" or "dp:m tp:n": axis:letter pairs separated by spaces.
  std::vector<std::pair<std::string, std::string>> pairs;
  std::size_t start = 0;
  const std::string_view a = s.assignment;
  while (start < a.size()) {
    auto end = a.find(' ', start);
    if (end == std::string_view::npos) end = a.size();
    const auto item = a.substr(start, end - start);
    const auto colon = item.find(':');
    if (!item.empty()) {
      if (colon == std::string_view::npos) return fmt::format("unreadable assignment '{}'", s.assignment);
      pairs.emplace_back(std::string(item.substr(0, colon)), std::string(item.substr(colon + 1)));
    }
    start = end + 1;
  }
  for (const auto& [axis, letter] : pairs)
    if (axis != "tp") return fmt::format("the {} axis splits letter {} ({}): Megatron splits ops over tp only", axis, letter, s.assignment);
  if (pairs.size() > 1) return fmt::format("tp splits several letters ({})", s.assignment);
  if (pairs.empty()) return {};
  const std::string& l = pairs.front().second;
  const std::string& fam = s.family;
  if (fam == "matmul") {
    if (l == "n" || l == "k") return {};
    if (l == "m") return "tp splits the GEMM's rows (m): Megatron has only column (n) and row (k) parallel GEMMs";
    return fmt::format("tp splits the GEMM's batch letter {}: Megatron has only column (n) and row (k) parallel GEMMs", l);
  }
  if (fam == "attention") {
    if (l == "n") return {};
    return fmt::format("tp splits attention letter {}: Megatron splits attention by heads only", l);
  }
  if (fam == "embedding" || fam == "loss") {
    if (l == "v" || l == "c") return {};  // vocabulary-parallel embedding and cross-entropy
    return fmt::format("tp splits {} letter {}: Megatron splits embeddings and the loss by vocabulary only", fam, l);
  }
  if (fam == "conv") return fmt::format("tp splits convolution letter {}: Megatron has no convolution tensor parallelism", l);
  // Elementwise, norm, movement, softmax: judged by the first output's layout.
  const auto dims = s.outputs.empty() ? std::vector<std::string>{} : layout_dims(s.outputs.front());
  if (dims.size() >= 3 && has_axis(dims.front(), "tp"))
    return "tp splits the batch dimension: Megatron never splits the batch over tp";
  if (fam == "norm" && !dims.empty()) {
    if (has_axis(dims.back(), "tp")) return "tp splits the normalised (hidden) dimension: Megatron keeps norms whole";
    if (!sequence_parallel)
      for (std::size_t d = 0; d + 1 < dims.size(); ++d)
        if (has_axis(dims[d], "tp")) return "tp splits a norm's rows without sequence parallelism";
  }
  return {};
}

namespace detail {

Result<std::string> pick_version(Framework f, const Options& options) {
  const auto known = versions(f);
  if (options.version.empty()) return std::string(known.front());
  for (const auto v : known)
    if (v == options.version) return std::string(v);
  return make_error("{} version '{}' is not supported (known: {})", framework_name(f), options.version,
                    fmt::join(known, ", "));
}

std::vector<int> layers_per_chunk(const plan::Plan& p) {
  std::vector<int> out;
  for (const auto& c : p.layout.chunks) out.push_back(std::max(0, c.last_layer - c.first_layer + 1));
  return out;
}

int total_layers(const plan::Plan& p) {
  int n = 0;
  for (int c : layers_per_chunk(p)) n += c;
  return n;
}

std::vector<int> layers_per_rank(const plan::Plan& p) {
  std::vector<int> out(static_cast<std::size_t>(std::max(1, p.layout.pp)), 0);
  const auto per = layers_per_chunk(p);
  for (std::size_t i = 0; i < per.size(); ++i) out[i % out.size()] += per[i];
  return out;
}

bool even_cut(const plan::Plan& p) {
  const auto per = layers_per_chunk(p);
  return std::adjacent_find(per.begin(), per.end(), std::not_equal_to<>()) == per.end();
}

std::string cut_text(const plan::Plan& p) { return fmt::format("{}", fmt::join(layers_per_chunk(p), ",")); }

std::string layout_summary(const plan::Plan& p) {
  const auto& l = p.layout;
  const auto& t = p.training;
  return fmt::format("dp={} tp={} pp={} vp={} cp={} ep={} zero={}{}{} {} recompute={} {}; micro-batch {} x {}, global batch {}",
                     l.dp, l.tp, l.pp, l.vp, l.cp, l.ep, l.zero, l.distributed_optimizer ? " distributed-optimizer" : "",
                     l.sequence_parallel ? " sequence-parallel" : "", l.schedule,
                     t.recompute_modules.empty() ? t.recompute : t.recompute + "(" + t.recompute_modules + ")", t.precision,
                     t.micro_batch,
                     t.micro_batches, t.global_batch);
}

void check_rank_order(const plan::Plan& p, std::string_view framework, Findings& f) {
  static const std::array<std::string_view, 4> kOrder{"pp", "dp", "cp", "tp"};
  std::vector<std::string> axes, expected;
  for (const auto& a : p.layout.mesh)
    if (a.size > 1) axes.push_back(a.name);
  for (const auto n : kOrder)
    if (std::find(axes.begin(), axes.end(), n) != axes.end()) expected.emplace_back(n);
  if (axes != expected)
    f.lost(fmt::format("rank order: the plan's mesh is ({}) outermost first; {} orders ranks ({}): groups land on other devices",
                       fmt::join(axes, ","), framework, fmt::join(expected, ",")));
}

void check_megatron_patterns(const plan::Plan& p, std::string_view framework, Findings& f) {
  for (const auto& s : p.layout.strategies) {
    const auto why = beyond_megatron(s, p.layout.sequence_parallel);
    if (!why.empty())
      f.lost(fmt::format("op sharding of {} ({} {}, {} cop{}): {}; {} applies its own sharding to it", s.unit, s.family,
                         s.strategy, s.instances.size(), s.instances.size() == 1 ? "y" : "ies", why, framework));
  }
  if (p.layout.tp_splits_batch)
    f.lost(fmt::format("tp_splits_batch: data-parallel and model-parallel ops on the same tp devices; {} keeps tp for model parallelism only", framework));
}

void check_precision_by_class(const plan::Plan& p, std::string_view framework, Findings& f) {
  for (const auto& [cls, prec] : p.training.precision_by_class) {
    // Every target computes the loss and keeps the embedding in fp32 under
    // mixed precision; fp8 GEMMs are each exporter's business (fp8_matmuls).
    if ((cls == "loss" || cls == "embedding") && prec == "fp32") continue;
    if (cls == "matmul" && prec == "fp8") continue;
    f.lost(fmt::format("precision_by_class {}={}: {} has no per-class precision setting", cls, prec, framework));
  }
}

void check_optimizer_precision(const plan::Plan& p, std::string_view framework, Findings& f) {
  const auto& o = p.training.optimizer;
  if (o.state_dtype != "fp32")
    f.lost(fmt::format("optimizer state dtype {}: {} keeps fp32 optimizer states", o.state_dtype, framework));
  if (o.master_weights != "fp32")
    f.lost(fmt::format("master weights '{}': {} keeps an fp32 master copy", o.master_weights, framework));
}

bool fp8_matmuls(const plan::Plan& p) {
  if (p.training.precision == "fp8") return true;
  const auto it = p.training.precision_by_class.find("matmul");
  return it != p.training.precision_by_class.end() && it->second == "fp8";
}

std::string number(double v) {
  if (v == 0) return "0.0";
  return fmt::format("{}", v);
}

std::string header(const plan::Plan& p, std::string_view title, const Options& options, const Findings& f) {
  std::string out;
  out += fmt::format("{} exported by planner {} from {}\n", title, p.producer.version,
                     options.source.empty() ? std::string("a plan") : options.source);
  out += fmt::format("model {} ({} parameters, {} layers) on {} x {}\n", p.model.path, p.model.parameters,
                     total_layers(p), p.cluster.devices, p.cluster.profile);
  out += fmt::format("layout {}\n", layout_summary(p));
  out += fmt::format("predicted step {:.4g} s, MFU {:.1f} %\n", p.prediction.step_time_s, 100 * p.prediction.mfu);
  for (const auto& w : f.warnings) out += fmt::format("LOST: {}\n", w);
  for (const auto& n : f.notes) out += fmt::format("note: {}\n", n);
  return out;
}

std::string commented(std::string_view lines, std::string_view prefix) {
  std::string out;
  for (std::size_t b = 0; b < lines.size();) {
    std::size_t e = lines.find('\n', b);
    if (e == std::string_view::npos) e = lines.size() - 1;
    out += prefix;
    out += lines.substr(b, e + 1 - b);
    b = e + 1;
  }
  return out;
}

Result<std::vector<std::vector<long long>>> parse_strategy(std::string_view text) {
  // ( ( int {, int} ) {, ( ... )} ), spaces ignored; an inner "()" is an empty tuple.
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  auto bad = [&] { return make_error("strategy '{}' is not of the form ((a,b),(c,d))", text); };
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return bad();
  std::vector<std::vector<long long>> out;
  std::size_t i = 1;
  while (i < s.size() - 1) {
    if (s[i] != '(') return bad();
    ++i;
    std::vector<long long> tuple;
    while (i < s.size() && s[i] != ')') {
      std::size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      if (j == i || j - i > 12) return bad();
      tuple.push_back(std::stoll(s.substr(i, j - i)));
      i = j;
      if (i < s.size() && s[i] == ',') ++i;
    }
    if (i >= s.size()) return bad();
    ++i;  // ')'
    out.push_back(std::move(tuple));
    if (i < s.size() - 1) {
      if (s[i] != ',') return bad();
      ++i;
    }
  }
  return out;
}

Export finish(std::string text, Findings f, std::string header, bool comments_in_text, std::string strategy_file) {
  Export e;
  e.text = std::move(text);
  e.notes_text = std::move(header);
  e.comments_in_text = comments_in_text;
  e.warnings = std::move(f.warnings);
  e.notes = std::move(f.notes);
  e.strategy_file = std::move(strategy_file);
  return e;
}

}  // namespace detail
}  // namespace planner::exporters
