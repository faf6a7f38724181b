// The import pipeline: bytes -> ModelProto -> ParsedGraph -> bound inputs ->
// propagated shapes -> OpGraph with roles, batch axes, costs and analysis.
#include "planner/onnx/importer.hpp"

#include <algorithm>
#include <functional>
#include <set>

#include "build.hpp"
#include "model_io.hpp"
#include "planner/core/io.hpp"
#include "planner/graph/analysis.hpp"
#include "planner/ops/semantics.hpp"

namespace planner::onnx {

namespace {

using namespace detail;
using graph::TensorRole;

/// Probe offset added to batch dims to see which axes scale with the batch.
constexpr std::int64_t kProbeDelta = 2;

Status validate_options(const ImportOptions& o) {
  for (const auto& [name, v] : o.dims) {
    if (name.empty()) return make_error("--dim needs a name: --dim NAME=VALUE");
    if (v < 0 || v > kMaxDim) return make_error("--dim {}={} is out of range (0..2^40)", name, v);
  }
  if (o.batch && (*o.batch <= 0 || *o.batch > kMaxDim))
    return make_error("--batch {} is out of range (1..2^40)", *o.batch);
  return Status::success();
}

/// Which graph inputs carry data, how their dims are bound, and how the
/// batch-axis probe perturbs them.
struct InputPlan {
  std::vector<int> data_inputs;   ///< kept graph inputs that are not parameters
  std::vector<int> param_inputs;  ///< kept graph inputs matching --params-from-inputs
  Bindings bindings;
  Bindings probe;
  std::vector<int> static_probe;  ///< inputs whose static leading dim is perturbed by the probe
  /// The file's batch when no data input has a symbolic one and every data
  /// input leads with this same static dim (rebound to --batch after import).
  std::optional<std::int64_t> static_batch;
  std::vector<std::string> static_notes;  ///< "--batch does not change it", when it cannot be rebound
  std::vector<std::string> notes;
};

bool matches_any(const std::vector<std::string>& globs, std::string_view name) {
  for (const auto& g : globs)
    if (glob_match(g, name)) return true;
  return false;
}

/// Graph inputs that are trained weights: those --params-from-inputs names,
/// and, in training graphs (ONNX Runtime's), float inputs whose gradient the
/// graph outputs as "<name>_grad".
struct ParamInputs {
  std::vector<std::string> globs;
  std::set<std::string, std::less<>> by_grad;
  bool operator()(std::string_view name) const { return by_grad.count(name) || matches_any(globs, name); }
};

ParamInputs param_inputs(const ParsedGraph& pg, const ImportOptions& opts) {
  ParamInputs p;
  p.globs = opts.params_from_inputs;
  std::set<std::string_view> outputs;
  for (int t : pg.outputs) outputs.insert(pg.names[static_cast<std::size_t>(t)]);
  for (int t : pg.inputs) {
    const auto idx = static_cast<std::size_t>(t);
    if (pg.source[idx] != Source::input) continue;
    const auto& tt = pg.input_decl[idx]->type().tensor_type();
    if (!is_float_elem(tt.elem_type())) continue;
    if (outputs.count(std::string(pg.names[idx]) + "_grad")) p.by_grad.emplace(pg.names[idx]);
  }
  return p;
}

InputPlan plan_inputs(const ParsedGraph& pg, const ImportOptions& opts, const ParamInputs& is_param) {
  InputPlan p;
  p.bindings.dims.insert(opts.dims.begin(), opts.dims.end());
  std::set<std::string> batch_names;
  std::vector<std::string> unnamed;
  std::vector<std::string> static_notes;
  for (int t : pg.inputs) {
    const auto idx = static_cast<std::size_t>(t);
    if (pg.source[idx] != Source::input || !keep_tensor(pg, idx)) continue;
    if (is_param(pg.names[idx])) {
      p.param_inputs.push_back(t);
      continue;
    }
    p.data_inputs.push_back(t);
    const auto& tt = pg.input_decl[idx]->type().tensor_type();
    if (!tt.has_shape() || tt.shape().dim_size() == 0) continue;
    const auto& d0 = tt.shape().dim(0);
    if (d0.has_dim_value()) {
      if (opts.batch && d0.dim_value() != *opts.batch)
        static_notes.push_back(fmt::format("input '{}' has a static leading dim {}; --batch {} does not change it",
                                           pg.names[idx], d0.dim_value(), *opts.batch));
    } else if (!d0.dim_param().empty()) {
      batch_names.insert(d0.dim_param());
    } else {
      unnamed.emplace_back(pg.names[idx]);
    }
  }
  // A --dim that binds nothing is most likely a typo: say so.
  std::set<std::string, std::less<>> known;
  auto collect = [&known](const pb::ValueInfoProto* vi) {
    if (!vi || !vi->type().has_tensor_type()) return;
    for (const auto& d : vi->type().tensor_type().shape().dim())
      if (!d.dim_param().empty()) known.insert(d.dim_param());
  };
  for (std::size_t t = 0; t < pg.size(); ++t) {
    collect(pg.input_decl[t]);
    collect(pg.declared[t]);
  }
  for (const auto& [name, v] : opts.dims) {
    const auto colon = name.rfind(':');
    const bool tensor_axis = colon != std::string::npos && pg.index.count(std::string_view(name).substr(0, colon));
    if (!known.count(name) && !tensor_axis)
      p.notes.push_back(fmt::format("--dim {}={} matches no symbolic dim of the model", name, v));
  }
  // A static leading dim is the batch only when no input has a symbolic one
  // (past key/value inputs lead with 2, not with the batch).
  if (batch_names.empty() && unnamed.empty()) p.static_notes = std::move(static_notes);
  if (opts.batch) {
    for (const auto& n : batch_names) p.bindings.dims.emplace(n, *opts.batch);  // --dim wins
    for (const auto& n : unnamed) p.bindings.leading.emplace(n, *opts.batch);
  }
  p.probe = p.bindings;
  bool symbolic = false;
  for (const auto& n : batch_names)
    if (auto it = p.probe.dims.find(n); it != p.probe.dims.end()) {
      it->second += kProbeDelta;
      symbolic = true;
    }
  for (auto& [n, v] : p.probe.leading) {
    v += kProbeDelta;
    symbolic = true;
  }
  if (!symbolic) {
    // No symbolic batch: the leading dim of every data input is the batch.
    for (int t : p.data_inputs) {
      const auto& tt = pg.input_decl[static_cast<std::size_t>(t)]->type().tensor_type();
      if (tt.has_shape() && tt.shape().dim_size() > 0 && tt.shape().dim(0).has_dim_value()) p.static_probe.push_back(t);
    }
    bool common = !p.static_probe.empty();
    for (int t : p.static_probe) {
      const auto d0 = pg.input_decl[static_cast<std::size_t>(t)]->type().tensor_type().shape().dim(0).dim_value();
      if (p.static_batch && *p.static_batch != d0) common = false;
      p.static_batch = d0;
    }
    if (!common || (p.static_batch && *p.static_batch <= 0)) p.static_batch.reset();
  }
  return p;
}

/// Binds the declared shapes of the kept graph inputs. The first failure is
/// the error, with every other unbound symbolic name listed.
Status bind_inputs(const ParsedGraph& pg, const InputPlan& plan, const Bindings& b, std::vector<Info>& infos,
                   bool strict) {
  std::optional<Error> first;
  std::set<std::string> others;
  auto bind = [&](int t, bool data) {
    const auto idx = static_cast<std::size_t>(t);
    auto r = bind_declared(*pg.input_decl[idx], b, data);
    if (r.ok()) {
      infos[idx] = std::move(*r);
      return;
    }
    if (!first) first = r.error();
    const auto& tt = pg.input_decl[idx]->type().tensor_type();
    for (const auto& d : tt.shape().dim())
      if (!d.has_dim_value() && !d.dim_param().empty() && !b.dims.count(d.dim_param())) others.insert(d.dim_param());
  };
  for (int t : plan.data_inputs) bind(t, true);
  for (int t : plan.param_inputs) bind(t, false);
  if (!first || !strict) return Status::success();
  std::string msg = first->message;
  std::string also;
  for (const auto& o : others)
    if (msg.find("'" + o + "'") == std::string::npos) also += " " + o;
  if (!also.empty()) msg += " (also unbound:" + also + ")";
  return Error{msg};
}

std::vector<ShapeDisagreement> disagreements(const ParsedGraph& pg, const std::vector<Info>& infos,
                                             const BuiltGraph& b) {
  std::vector<ShapeDisagreement> out;
  auto check = [&](std::size_t t) {
    const auto* decl = pg.declared[t];
    if (!decl || !b.tensor_id[t] || !infos[t].shape || !decl->type().has_tensor_type()) return;
    const auto& tt = decl->type().tensor_type();
    if (!tt.has_shape()) return;
    ShapeDisagreement d;
    d.tensor = std::string(pg.names[t]);
    d.computed = *infos[t].shape;
    bool differ = tt.shape().dim_size() != static_cast<int>(d.computed.size());
    for (int k = 0; k < tt.shape().dim_size(); ++k) {
      const auto& dim = tt.shape().dim(k);
      d.declared.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
      if (dim.has_dim_value() && static_cast<std::size_t>(k) < d.computed.size() &&
          dim.dim_value() != d.computed[static_cast<std::size_t>(k)])
        differ = true;
    }
    if (differ) out.push_back(std::move(d));
  };
  std::vector<char> done(pg.size(), 0);
  for (int t : pg.outputs) {
    if (done[static_cast<std::size_t>(t)]) continue;
    done[static_cast<std::size_t>(t)] = 1;
    check(static_cast<std::size_t>(t));
  }
  for (std::size_t t = 0; t < pg.size(); ++t)
    if (!done[t] && pg.source[t] == Source::node) check(t);
  return out;
}

Result<ImportedModel> import_impl(std::string_view bytes, const ImportOptions& opts) {
  PLANNER_TRY_STATUS(validate_options(opts));
  PLANNER_TRY(pb::ModelProto model, parse_model(bytes));
  PLANNER_TRY_STATUS(check_model(model));
  PLANNER_TRY(ExternalDataStats ext, check_external_data(model));
  OpsetMap opsets;
  for (const auto& o : model.opset_import()) {
    std::string d = o.domain() == "ai.onnx" ? std::string() : o.domain();
    auto& v = opsets[d];
    v = std::max<int>(v, static_cast<int>(o.version()));
  }
  PLANNER_TRY(ParsedGraph pg, parse_graph(model.graph(), opsets, false));
  const ParamInputs is_param = param_inputs(pg, opts);
  InputPlan plan = plan_inputs(pg, opts, is_param);
  std::vector<Info> infos(pg.size());
  PLANNER_TRY_STATUS(bind_inputs(pg, plan, plan.bindings, infos, true));

  RunOptions run;
  run.bindings = &plan.bindings;
  run.opsets = &opsets;
  std::optional<std::unordered_map<std::string, Info>> whole_model;
  run.whole_model = [&]() {
    if (!whole_model) whole_model = onnx_infer_model(model, pg, infos);
    return &*whole_model;
  };
  PLANNER_TRY_STATUS(propagate(pg, infos, nullptr, run));

  auto roles = assign_roles(pg, infos, std::cref(is_param), false, nullptr);
  PLANNER_TRY(BuiltGraph built, build_graph(pg, infos, roles));

  if (!plan.data_inputs.empty()) {
    std::vector<Info> probe(pg.size());
    (void)bind_inputs(pg, plan, plan.probe, probe, false);
    for (int t : plan.static_probe)
      if (auto& s = probe[static_cast<std::size_t>(t)].shape; s && !s->empty()) (*s)[0] += kProbeDelta;
    RunOptions prun = run;
    prun.bindings = &plan.probe;
    prun.lenient = true;
    prun.whole_model = nullptr;
    (void)propagate(pg, probe, nullptr, prun);
    set_batch_axes(built, pg, infos, probe);
  }
  // A static batch is rebound to --batch (see ImportOptions::batch).
  std::optional<std::string> rebound;
  if (plan.static_batch && opts.batch && *opts.batch != *plan.static_batch) {
    if (auto st = rebind_static_batch(built.graph, *plan.static_batch, *opts.batch); st.ok()) {
      rebound = fmt::format("the model's batch is static ({}): rebound to --batch {} (every activation's batch axis "
                            "scaled)",
                            *plan.static_batch, *opts.batch);
      plan.static_notes.clear();
    } else {
      for (auto& n : plan.static_notes) n += fmt::format(" (cannot rebind: {})", st.error().message);
    }
  }

  ImportedModel out;
  auto& g = built.graph;
  g.info.producer_name = model.producer_name();
  g.info.producer_version = model.producer_version();
  g.info.ir_version = model.ir_version();
  for (const auto& [d, v] : opsets) g.info.opsets[d] = v;

  ImportReport& report = out.report;
  report.unknown_ops = ops::annotate(g);
  std::map<std::string, int> sub_unknown;
  PLANNER_TRY_STATUS(cost_control_flow(built, pg, infos, roles, nullptr, run, sub_unknown));
  for (const auto& op : g.ops()) {
    if (op.op_class != graph::OpClass::control_flow || !op.cost.known) continue;
    auto it = report.unknown_ops.find(graph::op_kind(op));
    if (it != report.unknown_ops.end() && --it->second <= 0) report.unknown_ops.erase(it);
  }
  for (const auto& [k, v] : sub_unknown) report.unknown_ops[k] += v;
  graph::analyze(g);

  report.disagreements = disagreements(pg, infos, built);
  report.notes = std::move(plan.notes);
  report.notes.insert(report.notes.end(), plan.static_notes.begin(), plan.static_notes.end());
  if (rebound) report.notes.push_back(*rebound);
  report.static_batch = plan.static_batch;
  report.batch_rebound = rebound.has_value();
  if (!is_param.by_grad.empty())
    report.notes.push_back(fmt::format(
        "{} graph inputs are trained weights: the graph outputs their gradients (<name>_grad)", is_param.by_grad.size()));
  if (ext.tensors > 0)
    report.notes.push_back(fmt::format("{} tensors hold external data in {} file(s); never opened, only dims and types used",
                                       ext.tensors, ext.files.size()));
  int unused = 0;
  for (std::size_t t = 0; t < pg.size(); ++t)
    if (pg.source[t] == Source::initializer && !keep_tensor(pg, t)) ++unused;
  if (unused > 0) report.notes.push_back(fmt::format("{} initializers are read by no op: ignored", unused));
  if (!report.disagreements.empty())
    report.notes.push_back(fmt::format("{} declared shapes disagree with the computed ones; the computed shapes are used",
                                       report.disagreements.size()));
  out.graph = std::move(g);
  return out;
}

}  // namespace

Result<ImportedModel> import_bytes(std::string_view bytes, std::string_view label, const std::filesystem::path& base_dir,
                                   const ImportOptions& opts) {
  (void)base_dir;  // external data is never opened; locations are only checked
  Result<ImportedModel> r = Error{};
  try {
    r = import_impl(bytes, opts);
  } catch (const std::exception& e) {
    return make_error("{}: internal error while importing: {}", label, e.what());
  }
  if (!r.ok()) return make_error("{}: {}", label, detail::one_line(r.error().message));
  r->path = std::string(label);
  return r;
}

Result<ImportedModel> import_file(const std::filesystem::path& path, const ImportOptions& opts) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return make_error("{}: no such file", path.string());
  if (std::filesystem::is_directory(st)) return make_error("{}: is a directory, expected an .onnx file", path.string());
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxProtoBytes)
    return make_error(
        "{}: {:.2f} GiB: protobuf cannot parse a single ONNX file of 2 GiB or more; save the model with its weights "
        "as external data (onnx.save_model(model, path, save_as_external_data=True))",
        path.string(), static_cast<double>(size) / (1024.0 * 1024.0 * 1024.0));
  PLANNER_TRY(std::string bytes, io::read_file(path));
  return import_bytes(bytes, path.string(), path.parent_path(), opts);
}

}  // namespace planner::onnx
