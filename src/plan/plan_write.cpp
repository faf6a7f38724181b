// Plan -> canonical JSON text.
//
// Canonical means: keys in the order the structs declare their fields, maps
// sorted by key, two-space indent, one trailing newline, integers as
// integers, doubles in nlohmann's shortest round-trip form with -0.0 written
// as 0.0. The layout is nlohmann's dump(2) except that each pipeline rank's
// program (an array of "F3@c1" steps) is written on one line, so a
// 1024-device plan stays small. Same plan, same bytes.

#include <string>

#include <nlohmann/json.hpp>

#include "internal.hpp"

namespace planner::plan {
namespace {

using ojson = nlohmann::ordered_json;

/// -0.0 -> 0.0 (NaN and infinities are rejected by validate(); nlohmann
/// would write them as null, which from_json rejects).
double canonical(double x) { return x == 0 ? 0.0 : x; }

ojson strings(const std::vector<std::string>& v) {
  ojson a = ojson::array();
  for (const auto& s : v) a.push_back(s);
  return a;
}

ojson write(const Producer& p) {
  ojson o;
  o["tool"] = p.tool;
  o["version"] = p.version;
  o["command"] = p.command;
  o["search_time_s"] = canonical(p.search_time_s);
  o["layouts_scored"] = p.layouts_scored;
  return o;
}

ojson write(const ModelIdentity& m) {
  ojson o;
  o["path"] = m.path;
  o["sha256"] = m.sha256;
  o["parameters"] = m.parameters;
  ojson dims = ojson::object();
  for (const auto& [k, v] : m.dims) dims[k] = v;
  o["dims"] = std::move(dims);
  if (m.batch) o["batch"] = *m.batch;
  o["params_from_inputs"] = strings(m.params_from_inputs);
  return o;
}

ojson write(const Cluster& c) {
  ojson o;
  o["profile"] = c.profile;
  o["profile_hash"] = c.profile_hash;
  o["devices"] = c.devices;
  o["devices_per_node"] = c.devices_per_node;
  o["overrides"] = c.overrides;
  return o;
}

ojson write(const OptimizerSettings& s) {
  ojson o;
  o["name"] = s.name;
  o["learning_rate"] = canonical(s.learning_rate);
  o["beta1"] = canonical(s.beta1);
  o["beta2"] = canonical(s.beta2);
  o["epsilon"] = canonical(s.epsilon);
  o["weight_decay"] = canonical(s.weight_decay);
  o["momentum"] = canonical(s.momentum);
  // Written only when not the default, so plans without them stay as they were.
  if (s.state_dtype != "fp32") o["state_dtype"] = s.state_dtype;
  if (s.master_weights != "fp32") o["master_weights"] = s.master_weights;
  return o;
}

ojson write(const Training& t) {
  ojson o;
  o["global_batch"] = t.global_batch;
  o["micro_batch"] = t.micro_batch;
  o["micro_batches"] = t.micro_batches;
  o["optimizer"] = write(t.optimizer);
  o["precision"] = t.precision;
  ojson by_class = ojson::object();
  for (const auto& [k, v] : t.precision_by_class) by_class[k] = v;
  o["precision_by_class"] = std::move(by_class);
  o["recompute"] = t.recompute;
  o["attention"] = t.attention;
  o["framework"] = t.framework;
  o["seed"] = t.seed;
  o["fused_loss"] = t.fused_loss;
  o["grad_reduce_bytes"] = t.grad_reduce_bytes;
  o["memory_format"] = t.memory_format;
  return o;
}

ojson write(const Chunk& c, const Layout& l) {
  ojson o;
  o["index"] = c.index;
  o["pipeline_rank"] = c.pipeline_rank;
  o["devices"] = c.devices.empty() ? stage_devices(l, c.pipeline_rank) : c.devices;
  o["first_layer"] = c.first_layer;
  o["last_layer"] = c.last_layer;
  o["embedding"] = c.embedding;
  o["head"] = c.head;
  o["ops"] = strings(c.ops);
  return o;
}

ojson write(const Collective& c) {
  ojson o;
  o["kind"] = c.kind;
  o["axis"] = c.axis;
  o["group_size"] = c.group_size;
  o["bytes"] = canonical(c.bytes);
  o["count"] = c.count;
  o["backward"] = c.backward;
  o["per_step"] = c.per_step;
  o["where"] = c.where;
  return o;
}

ojson write(const OpStrategy& s) {
  ojson o;
  o["unit"] = s.unit;
  o["instances"] = strings(s.instances);
  o["ops"] = strings(s.ops);
  o["family"] = s.family;
  o["strategy"] = s.strategy;
  o["assignment"] = s.assignment;
  o["inputs"] = strings(s.inputs);
  o["outputs"] = strings(s.outputs);
  ojson cs = ojson::array();
  for (const auto& c : s.collectives) cs.push_back(write(c));
  o["collectives"] = std::move(cs);
  return o;
}

ojson write(const Layout& l) {
  ojson o;
  o["dp"] = l.dp;
  o["tp"] = l.tp;
  o["pp"] = l.pp;
  o["cp"] = l.cp;
  o["ep"] = l.ep;
  o["vp"] = l.vp;
  o["sequence_parallel"] = l.sequence_parallel;
  o["zero"] = l.zero;
  o["distributed_optimizer"] = l.distributed_optimizer;
  o["tp_comm_overlap"] = l.tp_comm_overlap;
  o["tp_splits_batch"] = l.tp_splits_batch;
  o["schedule"] = l.schedule;
  ojson mesh = ojson::array();
  for (const auto& a : l.mesh) mesh.push_back(ojson{{"name", a.name}, {"size", a.size}, {"stride", a.stride}});
  o["mesh"] = std::move(mesh);
  ojson chunks = ojson::array();
  for (const auto& c : l.chunks) chunks.push_back(write(c, l));
  o["chunks"] = std::move(chunks);
  ojson programs = ojson::array();
  for (const auto& program : l.schedule_steps) {
    ojson steps = ojson::array();
    for (const auto& s : program) steps.push_back(detail::step_text(s));
    programs.push_back(std::move(steps));
  }
  o["schedule_steps"] = std::move(programs);
  ojson strategies = ojson::array();
  for (const auto& s : l.strategies) strategies.push_back(write(s));
  o["strategies"] = std::move(strategies);
  return o;
}

ojson write(const StageMemory& s) {
  ojson o;
  o["stage"] = s.stage;
  o["peak_bytes"] = canonical(s.peak_bytes);
  o["fits"] = s.fits;
  o["parameters"] = canonical(s.parameters);
  o["micro_batches_in_flight"] = canonical(s.micro_batches_in_flight);
  ojson items = ojson::array();
  for (const auto& i : s.items)
    items.push_back(ojson{{"kind", i.kind}, {"bytes", canonical(i.bytes)}, {"label", i.label}});
  o["items"] = std::move(items);
  return o;
}

ojson write(const Prediction& p) {
  ojson o;
  o["step_time_s"] = canonical(p.step_time_s);
  ojson breakdown = ojson::object();
  for (const auto& [k, v] : p.breakdown_s) breakdown[k] = canonical(v);
  o["breakdown_s"] = std::move(breakdown);
  o["model_tflops_per_device"] = canonical(p.model_tflops_per_device);
  o["hardware_tflops_per_device"] = canonical(p.hardware_tflops_per_device);
  o["mfu"] = canonical(p.mfu);
  o["hfu"] = canonical(p.hfu);
  o["capacity_bytes"] = canonical(p.capacity_bytes);
  o["fits"] = p.fits;
  ojson stages = ojson::array();
  for (const auto& s : p.stages) stages.push_back(write(s));
  o["stages"] = std::move(stages);
  o["lower_bound_s"] = canonical(p.lower_bound_s);
  o["gap"] = canonical(p.gap);
  ojson alternatives = ojson::array();
  for (const auto& a : p.alternatives)
    alternatives.push_back(
        ojson{{"layout", a.layout}, {"step_time_s", canonical(a.step_time_s)}, {"fits", a.fits}, {"why", a.why}});
  o["alternatives"] = std::move(alternatives);
  if (!p.timeline.empty()) {
    ojson stages = ojson::array();
    for (const auto& st : p.timeline) {
      ojson spans = ojson::array();
      for (const auto& sp : st.spans) {
        ojson x;
        x["stream"] = sp.stream;
        x["kind"] = sp.kind;
        if (sp.micro_batch) x["micro_batch"] = *sp.micro_batch;
        if (sp.chunk) x["chunk"] = *sp.chunk;
        if (sp.peer) x["peer"] = *sp.peer;
        x["start_s"] = canonical(sp.start_s);
        x["end_s"] = canonical(sp.end_s);
        spans.push_back(std::move(x));
      }
      stages.push_back(ojson{{"stage", st.stage}, {"spans", std::move(spans)}});
    }
    o["timeline"] = std::move(stages);
  }
  return o;
}

/// A scalar exactly as nlohmann's dump writes it (invalid UTF-8 in strings
/// becomes U+FFFD instead of throwing).
std::string scalar(const ojson& v) { return v.dump(-1, ' ', false, ojson::error_handler_t::replace); }

/// nlohmann's dump(2) layout, except that the arrays inside
/// "schedule_steps" and the span objects inside "spans" (the timeline) are
/// written on one line.
void emit(const ojson& v, int indent, bool compact_children, std::string& out) {
  const std::string pad(static_cast<std::size_t>(indent) + 2, ' ');
  if (v.is_object()) {
    if (v.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      if (!first) out += ",\n";
      first = false;
      out += pad;
      out += scalar(ojson(key));
      out += ": ";
      emit(value, indent + 2, key == "schedule_steps" || key == "spans", out);
    }
    out += '\n';
    out.append(static_cast<std::size_t>(indent), ' ');
    out += '}';
  } else if (v.is_array()) {
    if (v.empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    bool first = true;
    for (const auto& e : v) {
      if (!first) out += ",\n";
      first = false;
      out += pad;
      if (compact_children && e.is_array()) {
        out += '[';
        bool first_step = true;
        for (const auto& s : e) {
          if (!first_step) out += ", ";
          first_step = false;
          out += scalar(s);
        }
        out += ']';
      } else if (compact_children && e.is_object()) {
        out += '{';
        bool first_key = true;
        for (const auto& [k, x] : e.items()) {
          if (!first_key) out += ", ";
          first_key = false;
          out += scalar(ojson(k));
          out += ": ";
          out += scalar(x);
        }
        out += '}';
      } else {
        emit(e, indent + 2, false, out);
      }
    }
    out += '\n';
    out.append(static_cast<std::size_t>(indent), ' ');
    out += ']';
  } else {
    out += scalar(v);
  }
}

}  // namespace

std::string to_json(const Plan& p) {
  ojson o;
  o["format"] = p.format;
  o["producer"] = write(p.producer);
  o["model"] = write(p.model);
  o["cluster"] = write(p.cluster);
  o["training"] = write(p.training);
  o["layout"] = write(p.layout);
  o["prediction"] = write(p.prediction);
  std::string out;
  emit(o, 0, false, out);
  out += '\n';
  return out;
}

}  // namespace planner::plan
