// Derives one rank's replay program from a plan and its model graph
// (include/planner/executor/program.hpp has the design note).

#include "planner/executor/program.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "planner/graph/analysis.hpp"
#include "planner/layout/mesh.hpp"
#include "planner/layout/tensor_layout.hpp"
#include "planner/ops/recompute.hpp"

namespace planner::executor {

std::string_view component_name(Component c) {
  switch (c) {
    case Component::compute: return "compute";
    case Component::tp_comm: return "tp_comm";
    case Component::pp_comm: return "pp_comm";
    case Component::dp_comm: return "dp_comm";
    case Component::optimizer: return "optimizer";
  }
  return "?";
}

Result<core::Collective> parse_coll_kind(std::string_view s) {
  if (auto k = core::parse_collective(s)) return *k;
  return make_error("unknown collective kind '{}'", s);
}

ProgramCounts RankProgram::counts() const {
  ProgramCounts c;
  auto add = [&](const Task& t) {
    switch (t.kind) {
      case TaskKind::gemm:
        ++c.gemms;
        c.gemm_flops += 2.0 * static_cast<double>(t.m) * static_cast<double>(t.n) * static_cast<double>(t.k) *
                        static_cast<double>(t.batch);
        break;
      case TaskKind::memory: c.memory_bytes += t.read_bytes + t.write_bytes; break;
      case TaskKind::collective: ++c.collectives; break;
      case TaskKind::send: ++c.sends; break;
      case TaskKind::recv: ++c.recvs; break;
      case TaskKind::optimizer: break;
    }
  };
  for (const auto& s : steps)
    for (const auto& t : s.tasks) add(t);
  for (const auto& t : finish) add(t);
  return c;
}

double RankProgram::memory_bytes() const {
  // Parameters and gradients (f32), optimizer states on the updated share,
  // then one working buffer per kind of task (reused by every task).
  const double state = 4.0 * (2.0 * static_cast<double>(parameters) +
                              static_cast<double>(optimizer_states) * static_cast<double>(optimizer_elements));
  return state + 4.0 * static_cast<double>(max_gemm_floats) + 2.0 * max_memory_bytes +
         2.0 * static_cast<double>(max_comm_bytes) + 2.0 * static_cast<double>(max_transfer_bytes);
}

namespace {

const plan::MeshAxis* find_axis(const plan::Plan& p, std::string_view name) {
  for (const auto& a : p.layout.mesh)
    if (a.name == name) return &a;
  return nullptr;
}

int degree(const plan::Plan& p, std::string_view name) {
  const auto& l = p.layout;
  if (name == "pp") return l.pp;
  if (name == "dp") return l.dp;
  if (name == "cp") return l.cp;
  if (name == "tp") return l.tp;
  return 0;
}

// Mesh order of the plan's axes: pp, dp, cp, tp (the order of plan meshes).
constexpr std::string_view kAxisOrder[] = {"pp", "dp", "cp", "tp"};

// "tp", "cp,tp", "dp+cp" -> canonical "cp,tp" (mesh order); error on an unknown name.
Result<std::string> canonical_axes(std::string_view text) {
  std::set<std::string> names;
  std::string cur;
  for (char ch : std::string(text) + ",") {
    if (ch == ',' || ch == '+' || ch == ' ' || ch == '*') {
      if (!cur.empty()) names.insert(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  std::string out;
  for (auto a : kAxisOrder)
    if (names.erase(std::string(a))) out += (out.empty() ? "" : ",") + std::string(a);
  if (!names.empty() || out.empty()) return make_error("unknown mesh axis '{}'", text);
  return out;
}

int group_size_of(const plan::Plan& p, std::string_view axes) {
  int n = 1;
  std::string cur;
  for (char ch : std::string(axes) + ",") {
    if (ch == ',') {
      n *= degree(p, cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  return n;
}

// 1 / (product of the sizes of the axes in an assignment such as "tp:n cp:s").
double compute_fraction(const plan::Plan& p, std::string_view assignment) {
  double f = 1.0;
  std::string tok;
  for (char ch : std::string(assignment) + " ") {
    if (ch == ' ') {
      const auto colon = tok.find(':');
      if (colon != std::string::npos) {
        const int d = degree(p, tok.substr(0, colon));
        if (d > 0) f /= d;
      }
      tok.clear();
    } else {
      tok += ch;
    }
  }
  return f;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct UnitRef {
  std::size_t unit = 0;
  std::size_t instance = 0;
};

class Deriver {
 public:
  Deriver(const plan::Plan& p, const graph::OpGraph& g, int rank, const ProgramOptions& o)
      : p_(p), g_(g), rank_(rank), options_(o) {}

  Result<RankProgram> run() {
    const auto& l = p_.layout;
    prog_.rank = rank_;
    prog_.pp_rank = coordinate(p_, rank_, "pp");
    auto mesh = layout::DeviceMesh::create({{"cp", l.cp}, {"tp", l.tp}});
    if (!mesh) return mesh.error();
    mesh_ = *mesh;
    act_bytes_ = (p_.training.precision == "fp32" || p_.training.precision == "tf32") ? 4 : 2;
    PLANNER_TRY_STATUS(index_units());
    PLANNER_TRY_STATUS(index_chunks());
    PLANNER_TRY_STATUS(collect_groups());
    const int C = static_cast<int>(l.chunks.size());
    std::vector<std::int64_t> chunk_params(static_cast<std::size_t>(C), 0);
    std::map<int, std::pair<std::vector<Task>, std::vector<Task>>> work;  // chunk -> (fwd, bwd)
    for (const auto& ch : l.chunks) {
      if (ch.pipeline_rank != prog_.pp_rank) continue;
      std::int64_t params = 0;
      auto fb = chunk_tasks(ch, params);
      if (!fb) return fb.error();
      work[ch.index] = std::move(*fb);
      chunk_params[static_cast<std::size_t>(ch.index)] = params;
      prog_.parameters += params;
    }
    const auto boundaries = boundary_bytes();
    if (!boundaries) return boundaries.error();
    PLANNER_TRY_STATUS(build_steps(work, *boundaries, chunk_params));
    build_finish();
    return std::move(prog_);
  }

 private:
  Status index_units() {
    const auto& st = p_.layout.strategies;
    for (std::size_t u = 0; u < st.size(); ++u) {
      for (std::size_t i = 0; i < st[u].instances.size(); ++i) {
        const auto id = g_.find_op(st[u].instances[i]);
        if (!id)
          return make_error("layout.strategies[{}].instances[{}]: op '{}' is not in the model", u, i,
                            st[u].instances[i]);
        const auto& op = g_.op(*id);
        std::vector<graph::OpId> ops{*id};
        if (st[u].ops.size() > 1 && op.fused_group && *op.fused_group < static_cast<int>(g_.fused.size()))
          ops = g_.fused[static_cast<std::size_t>(*op.fused_group)].ops;
        for (auto o : ops) unit_of_[o.value] = UnitRef{u, i};
        instance_size_[{u, i}] = ops.size();
      }
    }
    return {};
  }

  Status index_chunks() {
    for (const auto& ch : p_.layout.chunks)
      for (std::size_t i = 0; i < ch.ops.size(); ++i) {
        const auto id = g_.find_op(ch.ops[i]);
        if (!id) return make_error("layout.chunks[{}].ops[{}]: op '{}' is not in the model", ch.index, i, ch.ops[i]);
        chunk_of_[id->value] = ch.index;
      }
    return {};
  }

  Status collect_groups() {
    std::set<std::string> groups;
    const auto& st = p_.layout.strategies;
    for (std::size_t u = 0; u < st.size(); ++u)
      for (std::size_t c = 0; c < st[u].collectives.size(); ++c) {
        const auto& col = st[u].collectives[c];
        auto axes = canonical_axes(col.axis);
        if (!axes)
          return make_error("layout.strategies[{}].collectives[{}].axis: {}", u, c, axes.error().message);
        if (auto k = parse_coll_kind(col.kind); !k)
          return make_error("layout.strategies[{}].collectives[{}].kind: {}", u, c, k.error().message);
        const int n = group_size_of(p_, *axes);
        if (n != col.group_size)
          return make_error("layout.strategies[{}].collectives[{}]: group_size {} but axes '{}' have {} ranks", u, c,
                            col.group_size, *axes, n);
        if (n > 1) groups.insert(*axes);
      }
    if (dp_group_size() > 1) groups.insert(dp_axes());
    prog_.groups.assign(groups.begin(), groups.end());
    return {};
  }

  std::string dp_axes() const { return p_.layout.cp > 1 ? "dp,cp" : "dp"; }
  int dp_group_size() const { return p_.layout.dp * p_.layout.cp; }

  // Local shape of input/output `port` of a single-op unit, or nullopt.
  std::optional<std::vector<std::int64_t>> local(const graph::Tensor& t, const std::string& text) const {
    if (text.empty()) return std::nullopt;
    auto lay = layout::parse_layout(text, mesh_);
    if (!lay || !lay->validate(t.shape, mesh_)) return std::nullopt;
    return lay->local_shape(t.shape, mesh_);
  }

  static std::int64_t numel(const std::vector<std::int64_t>& s) {
    std::int64_t n = 1;
    for (auto d : s) n *= d;
    return n;
  }

  const plan::OpStrategy* strategy_of(graph::OpId id) const {
    const auto it = unit_of_.find(id.value);
    return it == unit_of_.end() ? nullptr : &p_.layout.strategies[it->second.unit];
  }

  static bool needs_grad(const graph::Tensor* t) {
    return t && core::is_floating(t->dtype) &&
           (t->role == graph::TensorRole::activation || t->role == graph::TensorRole::parameter);
  }

  // GEMM tasks of a MatMul/Gemm: forward, then dA and dB as the inputs need them.
  void gemm_tasks(const graph::Op& op, const plan::OpStrategy* s, double frac, std::vector<Task>& fwd,
                  std::vector<Task>& bwd) {
    const auto* a = g_.input(op, 0);
    const auto* b = g_.input(op, 1);
    if (!a || !b) return;
    std::vector<std::int64_t> as = a->shape, bs = b->shape;
    const bool single = s && s->ops.size() == 1 && s->inputs.size() >= 2;
    bool sharded = false;
    if (single) {
      auto la = local(*a, s->inputs[0]);
      auto lb = local(*b, s->inputs[1]);
      if (la && lb) as = *la, bs = *lb, sharded = true;
    }
    bool ta = false, tb = false;
    if (op.type == "Gemm") {
      ta = op.attr_int("transA").value_or(0) != 0;
      tb = op.attr_int("transB").value_or(0) != 0;
    }
    if (as.empty() || bs.empty()) return;
    if (as.size() == 1) as.insert(as.begin(), 1);
    const bool b_vec = bs.size() == 1;
    if (b_vec) bs.push_back(1);
    std::int64_t m = ta ? as[as.size() - 1] : as[as.size() - 2];
    std::int64_t k = ta ? as[as.size() - 2] : as[as.size() - 1];
    std::int64_t n = tb ? bs[bs.size() - 2] : bs[bs.size() - 1];
    std::int64_t a_batch = 1, b_batch = 1;
    for (std::size_t i = 0; i + 2 < as.size(); ++i) a_batch *= as[i];
    for (std::size_t i = 0; i + 2 < bs.size(); ++i) b_batch *= bs[i];
    std::int64_t batch = 1;
    if (b_batch == 1) {
      m *= a_batch;  // x[b,s,k] W[k,n]: one GEMM of (b s) rows
    } else {
      batch = std::max(a_batch, b_batch);
    }
    if (!sharded && frac < 1.0) {  // a fused pattern's share: split the batch, else the rows
      const auto f = static_cast<std::int64_t>(1.0 / frac + 0.5);
      if (batch % f == 0) batch /= f;
      else m = ceil_div(m, f);
    }
    Task t;
    t.kind = TaskKind::gemm;
    t.op = op.name;
    t.batch = batch;
    t.m = m, t.n = n, t.k = k;
    fwd.push_back(t);
    prog_.max_gemm_floats = std::max(prog_.max_gemm_floats, batch * (m * k + k * n + m * n));
    if (needs_grad(a)) {  // dA[m,k] = dC[m,n] B^T
      Task d = t;
      d.m = m, d.n = k, d.k = n;
      bwd.push_back(d);
    }
    if (needs_grad(b)) {  // dB[k,n] = A^T dC[m,n]
      Task d = t;
      d.m = k, d.n = n, d.k = m;
      bwd.push_back(d);
    }
  }

  // The share of an elementwise op's traffic left when the framework fuses
  // elementwise chains: the tensors it shares with a fused neighbour stay in
  // registers (the cost model's rule, cost/compute.cpp).
  double fused_keep(const graph::Op& op) const {
    if (!options_.fuse_elementwise || op.op_class != graph::OpClass::elementwise) return 1.0;
    const double total = op.cost.forward_bytes_read.value + op.cost.forward_bytes_written.value;
    if (total <= 0) return 1.0;
    double fused = 0;
    for (const auto& in : op.inputs)
      if (in && graph::fusible_elementwise_edge(g_.tensor(*in), g_)) fused += g_.tensor(*in).bytes().value;
    for (const auto& out : op.outputs)
      if (out && graph::fusible_elementwise_edge(g_.tensor(*out), g_)) fused += g_.tensor(*out).bytes().value;
    return std::max(0.0, 1.0 - fused / total);
  }

  Result<std::pair<std::vector<Task>, std::vector<Task>>> chunk_tasks(const plan::Chunk& ch, std::int64_t& params) {
    std::vector<Task> fwd, recompute;
    std::vector<std::vector<Task>> bwd_by_op;
    std::map<std::pair<std::size_t, std::size_t>, std::size_t> seen;  // (unit, instance) -> ops seen
    std::set<std::uint32_t> param_seen;
    const bool full = p_.training.recompute == "full";
    const bool selective = p_.training.recompute == "selective";
    ops::RecomputeModules modules;
    if (selective && !p_.training.recompute_modules.empty()) {
      auto m = ops::RecomputeModules::parse(p_.training.recompute_modules);
      if (!m) return Error{"training.recompute_modules: " + m.error().message};
      modules = *m;
    }
    for (const auto& name : ch.ops) {
      const auto id = *g_.find_op(name);
      const auto& op = g_.op(id);
      const auto* s = strategy_of(id);
      const double frac = s ? compute_fraction(p_, s->assignment) : 1.0;
      const std::size_t fwd_before = fwd.size();
      std::vector<Task> bwd;
      if (op.type == "MatMul" || op.type == "Gemm") {
        gemm_tasks(op, s, frac, fwd, bwd);
      } else {
        Task t;
        t.kind = TaskKind::memory;
        t.op = op.name;
        const double keep = fused_keep(op);
        t.read_bytes = op.cost.forward_bytes_read.value * frac * keep;
        t.write_bytes = op.cost.forward_bytes_written.value * frac * keep;
        if (t.read_bytes + t.write_bytes > 0) fwd.push_back(t);
        prog_.max_memory_bytes = std::max(prog_.max_memory_bytes, std::max(t.read_bytes, t.write_bytes));
        t.read_bytes = op.cost.backward_bytes_read.value * frac * keep;
        t.write_bytes = op.cost.backward_bytes_written.value * frac * keep;
        if (t.read_bytes + t.write_bytes > 0) bwd.push_back(t);
        prog_.max_memory_bytes = std::max(prog_.max_memory_bytes, std::max(t.read_bytes, t.write_bytes));
      }
      // Selective: the attention strategies (core_attn), and the norms and
      // experts' activations --recompute-modules names.
      if (full || (selective && s && s->family == "attention" && modules.has(ops::RecomputeModules::kCoreAttn)) ||
          (selective && ops::output_dropping_group(op, ops::RecomputePolicy::selective, modules)))
        recompute.insert(recompute.end(), fwd.begin() + static_cast<std::ptrdiff_t>(fwd_before), fwd.end());
      // Parameters, sharded by the layout of the port that reads them.
      for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        const auto& in = op.inputs[i];
        if (!in || g_.tensor(*in).role != graph::TensorRole::parameter || !param_seen.insert(in->value).second)
          continue;
        const auto& t = g_.tensor(*in);
        std::int64_t n = t.numel();
        if (s && s->ops.size() == 1 && i < s->inputs.size())
          if (auto ls = local(t, s->inputs[i])) n = numel(*ls);
        params += n;
      }
      // The unit's collectives, once the copy's last op has been seen.
      if (const auto it = unit_of_.find(id.value); it != unit_of_.end()) {
        const auto key = std::make_pair(it->second.unit, it->second.instance);
        if (++seen[key] == instance_size_[key]) {
          PLANNER_TRY_STATUS(unit_collectives(it->second, fwd, bwd, recompute, full));
        }
      }
      bwd_by_op.push_back(std::move(bwd));
    }
    std::vector<Task> backward = recompute;
    for (auto it = bwd_by_op.rbegin(); it != bwd_by_op.rend(); ++it) backward.insert(backward.end(), it->begin(), it->end());
    return std::make_pair(std::move(fwd), std::move(backward));
  }

  Status unit_collectives(const UnitRef& ref, std::vector<Task>& fwd, std::vector<Task>& bwd,
                          std::vector<Task>& recompute, bool full) {
    const auto& s = p_.layout.strategies[ref.unit];
    const auto copies = static_cast<int>(s.instances.size());
    for (const auto& c : s.collectives) {
      // The unit's count is summed over its copies: copy i runs its share.
      const int share = c.count / copies + (static_cast<int>(ref.instance) < c.count % copies ? 1 : 0);
      if (share == 0 || c.group_size <= 1) continue;
      Task t;
      t.kind = TaskKind::collective;
      t.op = c.where.empty() ? s.unit : c.where;
      t.coll = *parse_coll_kind(c.kind);
      t.axes = *canonical_axes(c.axis);
      t.group_size = c.group_size;
      t.bytes = static_cast<std::int64_t>(c.bytes + 0.5);
      t.component = t.axes.find("dp") != std::string::npos ? Component::dp_comm : Component::tp_comm;
      prog_.max_comm_bytes = std::max(prog_.max_comm_bytes, t.bytes);
      for (int i = 0; i < share; ++i) {
        if (c.per_step) pending_finish_.push_back(t);
        else if (c.backward) bwd.push_back(t);
        else {
          fwd.push_back(t);
          if (full) recompute.push_back(t);  // the recomputed forward issues it again
        }
      }
    }
    return {};
  }

  // Bytes crossing boundary c (chunk c -> c + 1) per micro-batch: tensors
  // produced in chunks <= c and read in chunks > c, at their producer's
  // local shape, floating ones at the training precision.
  Result<std::vector<std::int64_t>> boundary_bytes() const {
    const int C = static_cast<int>(p_.layout.chunks.size());
    std::vector<std::int64_t> out(static_cast<std::size_t>(std::max(C - 1, 0)), 0);
    for (std::size_t ti = 0; ti < g_.num_tensors(); ++ti) {
      const auto& t = g_.tensors()[ti];
      if (!t.producer) continue;
      const auto pc = chunk_of_.find(t.producer->value);
      if (pc == chunk_of_.end()) continue;
      int last = -1;
      for (auto c : t.consumers)
        if (const auto it = chunk_of_.find(c.value); it != chunk_of_.end()) last = std::max(last, it->second);
      if (last <= pc->second) continue;
      std::int64_t n = t.numel();
      const auto& prod = g_.op(*t.producer);
      if (const auto* s = strategy_of(*t.producer); s && s->ops.size() == 1)
        for (std::size_t o = 0; o < prod.outputs.size() && o < s->outputs.size(); ++o)
          if (prod.outputs[o] && prod.outputs[o]->value == ti)
            if (auto ls = local(t, s->outputs[o])) n = numel(*ls);
      const std::int64_t per = core::is_floating(t.dtype) ? act_bytes_ : static_cast<std::int64_t>(core::dtype_size(t.dtype));
      for (int c = pc->second; c < last; ++c) out[static_cast<std::size_t>(c)] += n * per;
    }
    return out;
  }

  Status build_steps(const std::map<int, std::pair<std::vector<Task>, std::vector<Task>>>& work,
                     const std::vector<std::int64_t>& boundary, const std::vector<std::int64_t>& chunk_params) {
    const auto& l = p_.layout;
    const int C = static_cast<int>(l.chunks.size());
    const int pp_rank = prog_.pp_rank;
    if (pp_rank >= static_cast<int>(l.schedule_steps.size()))
      return make_error("layout.schedule_steps: no program for pipeline rank {}", pp_rank);
    const bool zero3 = l.zero == 3 && dp_group_size() > 1;
    auto transfer = [&](TaskKind kind, int chunk_peer, int tag, std::int64_t bytes) {
      Task t;
      t.kind = kind;
      t.component = Component::pp_comm;
      t.peer_pp = chunk_peer % l.pp;
      t.tag = tag;
      t.bytes = bytes;
      t.op = fmt::format("chunk {}", chunk_peer);
      prog_.max_transfer_bytes = std::max(prog_.max_transfer_bytes, bytes);
      return t;
    };
    for (const auto& st : l.schedule_steps[static_cast<std::size_t>(pp_rank)]) {
      StepProgram sp;
      sp.step = st;
      const auto it = work.find(st.chunk);
      if (it == work.end())
        return make_error("layout.schedule_steps[{}]: chunk {} does not belong to pipeline rank {}", pp_rank, st.chunk,
                          pp_rank);
      const std::int64_t cparams = chunk_params[static_cast<std::size_t>(st.chunk)];
      auto gather = [&](core::Collective kind, std::int64_t bytes) {
        Task t;
        t.kind = TaskKind::collective;
        t.component = Component::dp_comm;
        t.coll = kind;
        t.axes = dp_axes();
        t.group_size = dp_group_size();
        t.bytes = bytes;
        t.op = fmt::format("zero-3 chunk {}", st.chunk);
        prog_.max_comm_bytes = std::max(prog_.max_comm_bytes, bytes);
        return t;
      };
      if (st.kind == 'F') {
        if (st.chunk > 0) sp.tasks.push_back(transfer(TaskKind::recv, st.chunk - 1, 0, boundary[static_cast<std::size_t>(st.chunk - 1)]));
        if (zero3) sp.tasks.push_back(gather(core::Collective::all_gather, cparams * act_bytes_));
        sp.tasks.insert(sp.tasks.end(), it->second.first.begin(), it->second.first.end());
        if (st.chunk < C - 1) sp.tasks.push_back(transfer(TaskKind::send, st.chunk + 1, 0, boundary[static_cast<std::size_t>(st.chunk)]));
      } else {
        if (st.chunk < C - 1) sp.tasks.push_back(transfer(TaskKind::recv, st.chunk + 1, 1, boundary[static_cast<std::size_t>(st.chunk)]));
        if (zero3) sp.tasks.push_back(gather(core::Collective::all_gather, cparams * act_bytes_));
        sp.tasks.insert(sp.tasks.end(), it->second.second.begin(), it->second.second.end());
        if (zero3) sp.tasks.push_back(gather(core::Collective::reduce_scatter, cparams * grad_bytes()));
        if (st.chunk > 0) sp.tasks.push_back(transfer(TaskKind::send, st.chunk - 1, 1, boundary[static_cast<std::size_t>(st.chunk - 1)]));
      }
      prog_.steps.push_back(std::move(sp));
    }
    return {};
  }

  std::int64_t grad_bytes() const { return p_.training.grad_reduce_bytes > 0 ? p_.training.grad_reduce_bytes : 4; }

  void build_finish() {
    const auto& l = p_.layout;
    prog_.finish = pending_finish_;
    const int G = dp_group_size();
    const bool sharded = G > 1 && (l.zero >= 1 || l.distributed_optimizer);
    auto coll = [&](core::Collective kind, std::int64_t bytes) {
      Task t;
      t.kind = TaskKind::collective;
      t.component = Component::dp_comm;
      t.coll = kind;
      t.axes = dp_axes();
      t.group_size = G;
      t.bytes = bytes;
      t.op = "data-parallel gradients";
      prog_.max_comm_bytes = std::max(prog_.max_comm_bytes, bytes);
      return t;
    };
    if (G > 1 && !sharded) prog_.finish.push_back(coll(core::Collective::all_reduce, prog_.parameters * grad_bytes()));
    if (sharded && l.zero < 3) prog_.finish.push_back(coll(core::Collective::reduce_scatter, prog_.parameters * grad_bytes()));
    const auto& opt = p_.training.optimizer.name;
    prog_.optimizer_states = opt == "adam" ? 2 : opt == "sgd_momentum" ? 1 : 0;
    prog_.optimizer_elements = sharded ? ceil_div(prog_.parameters, G) : prog_.parameters;
    Task o;
    o.kind = TaskKind::optimizer;
    o.component = Component::optimizer;
    o.op = "optimizer " + opt;
    o.elements = prog_.optimizer_elements;
    // adam: reads p, g, m, v and writes p, m, v; sgd_momentum: p, g, v / p, v; sgd: p, g / p.
    const double per = 4.0 * static_cast<double>(o.elements);
    o.read_bytes = per * (2 + prog_.optimizer_states);
    o.write_bytes = per * (1 + prog_.optimizer_states);
    prog_.finish.push_back(o);
    if (sharded && l.zero < 3) prog_.finish.push_back(coll(core::Collective::all_gather, prog_.parameters * act_bytes_));
  }

  const plan::Plan& p_;
  const graph::OpGraph& g_;
  int rank_;
  ProgramOptions options_;
  RankProgram prog_;
  layout::DeviceMesh mesh_;
  std::int64_t act_bytes_ = 2;
  std::map<std::uint32_t, UnitRef> unit_of_;
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> instance_size_;
  std::map<std::uint32_t, int> chunk_of_;
  std::vector<Task> pending_finish_;
};

}  // namespace

int coordinate(const plan::Plan& p, int rank, std::string_view name) {
  const auto* a = find_axis(p, name);
  if (!a || a->size <= 1) return 0;
  return (rank / a->stride) % a->size;
}

int with_coordinate(const plan::Plan& p, int rank, std::string_view name, int value) {
  const auto* a = find_axis(p, name);
  if (!a || a->size <= 1) return rank;
  return rank + (value - coordinate(p, rank, name)) * a->stride;
}

Result<RankProgram> derive_program(const plan::Plan& p, const graph::OpGraph& g, int rank,
                                   const ProgramOptions& options) {
  if (rank < 0 || rank >= p.cluster.devices)
    return make_error("rank {} is outside the plan's {} devices", rank, p.cluster.devices);
  return Deriver(p, g, rank, options).run();
}

Status order_transfers(std::vector<RankProgram>& programs) {
  struct Cursor {
    std::size_t step = 0, task = 0;
  };
  const int P = static_cast<int>(programs.size());
  std::vector<Cursor> cur(static_cast<std::size_t>(P));
  std::map<std::tuple<int, int, int>, std::vector<Task*>> pending;  // (from, to, tag) -> sends, FIFO
  std::map<std::tuple<int, int, int>, std::size_t> head;
  std::int64_t next = 0;
  auto done = [&](int r) { return cur[static_cast<std::size_t>(r)].step >= programs[static_cast<std::size_t>(r)].steps.size(); };
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < P; ++r) {
      auto& c = cur[static_cast<std::size_t>(r)];
      auto& steps = programs[static_cast<std::size_t>(r)].steps;
      while (c.step < steps.size()) {
        auto& tasks = steps[c.step].tasks;
        if (c.task >= tasks.size()) {
          ++c.step, c.task = 0;
          continue;
        }
        Task& t = tasks[c.task];
        if (t.kind == TaskKind::send) {
          pending[{r, t.peer_pp, t.tag}].push_back(&t);
        } else if (t.kind == TaskKind::recv) {
          const std::tuple<int, int, int> key{t.peer_pp, r, t.tag};
          auto& q = pending[key];
          auto& h = head[key];
          if (h >= q.size()) break;  // blocked: the sender has not produced it yet
          q[h++]->order = next;
          t.order = next++;
        }
        ++c.task;
        progress = true;
      }
    }
  }
  for (int r = 0; r < P; ++r)
    if (!done(r)) {
      const auto& c = cur[static_cast<std::size_t>(r)];
      const auto& st = programs[static_cast<std::size_t>(r)].steps[c.step].step;
      return make_error("pipeline rank {} waits forever at {}{}@c{}: its neighbour never sends", r, st.kind,
                        st.micro_batch, st.chunk);
    }
  for (auto& [key, q] : pending)
    if (head[key] != q.size())
      return make_error("pipeline rank {} sends to rank {} (tag {}) what is never received", std::get<0>(key),
                        std::get<1>(key), std::get<2>(key));
  return {};
}

}  // namespace planner::executor
