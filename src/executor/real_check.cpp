// --check of the real mode (real_check.hpp).

#include "real_check.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "planner/runtime_cpu/elementwise.hpp"

namespace planner::executor::real_detail {

using graph::TensorId;
using runtime_cpu::Tensor;

Result<Reference::Step> Reference::step(const Named& run_gradients) {
  const int dp = p_.layout.dp;
  const auto M = p_.training.micro_batches;
  Step out;
  double loss = 0;
  for (int d = 0; d < dp; ++d) {
    std::map<std::string, Tensor> acc;
    for (std::int64_t m = 0; m < M; ++m) {
      for (const auto& [id, full] : inputs_) {
        const auto& t = g_.tensor(TensorId{id});
        PLANNER_TRY_STATUS(it_.set_input(t.name, slice_rows(full, t, m * dp + d)));
      }
      PLANNER_TRY(double l, it_.forward());
      loss += l;
      PLANNER_TRY(auto grads, it_.backward());
      for (auto& [name, gr] : grads) {
        if (auto a = acc.find(name); a != acc.end()) runtime_cpu::accumulate(a->second, gr);
        else acc.emplace(name, std::move(gr));
      }
    }
    for (auto& [name, gr] : acc) {
      if (auto a = out.gradients.find(name); a != out.gradients.end()) runtime_cpu::accumulate(a->second, gr);
      else out.gradients.emplace(name, std::move(gr));
    }
  }
  const float scale = 1.0f / static_cast<float>(static_cast<std::int64_t>(dp) * M);
  for (auto& [name, gr] : out.gradients) {
    for (auto& x : gr.data) x *= scale;
    const auto run = run_gradients.find(name);
    if (run == run_gradients.end() || run->second.size() != gr.data.size())
      return Error{fmt::format("--check: the run reported no gradient of '{}' of {} elements", name, gr.size())};
    Tensor w = *it_.parameter(name);
    optimizer_step(opt_, w.span(), run->second, state_[name]);
    out.weights.emplace(name, std::move(w));
  }
  out.loss = loss / static_cast<double>(static_cast<std::int64_t>(dp) * M);
  return out;
}

Status Reference::sync(const Named& weights) {
  for (const auto& [name, values] : weights) {
    Tensor* w = it_.parameter(name);
    if (w == nullptr || w->data.size() != values.size())
      return Error{fmt::format("--check: the reference has no parameter '{}' of {} elements", name, values.size())};
    std::copy(values.begin(), values.end(), w->data.begin());
  }
  return Status::success();
}

Reference::Named by_name(const graph::OpGraph& g, const std::vector<std::vector<graph::TensorId>>& stage_params,
                         const std::vector<std::vector<float>>& stage_flat) {
  Reference::Named out;
  for (std::size_t s = 0; s < stage_params.size(); ++s) {
    std::size_t off = 0;
    for (auto id : stage_params[s]) {
      const auto n = static_cast<std::size_t>(g.tensor(id).numel());
      if (off + n <= stage_flat[s].size()) out.emplace(g.tensor(id).name, std::span<const float>(stage_flat[s]).subspan(off, n));
      off += n;
    }
  }
  return out;
}

std::string compare_step(const plan::Plan& p, const graph::OpGraph& micro_graph,
                         const std::vector<std::vector<graph::TensorId>>& stage_params,
                         const std::vector<std::vector<float>>& stage_grad,
                         const std::vector<std::vector<float>>& stage_w, const Reference::Step& r, int step,
                         double loss, double tolerance, CheckedStep& cs) {
  cs.step = step;
  cs.loss = loss;
  cs.reference_loss = r.loss;
  cs.max_rel_error = rel_error(cs.loss, r.loss);
  cs.worst = "the loss";
  std::string failure;
  if (cs.max_rel_error > tolerance)
    failure = fmt::format("--check failed at step {}: the loss is {:.9g}, the reference {:.9g} (relative error "
                          "{:.3g} > {:.0e})",
                          step, cs.loss, r.loss, cs.max_rel_error, tolerance);
  // A tied weight (in several stages' lists): its gradient is the sum of the
  // stages' parts, added in another order than the reference's single
  // backward, so it is compared norm-wise like tp's (real_data.hpp).
  std::map<std::uint32_t, int> stages_of;
  for (const auto& ids : stage_params)
    for (auto id : ids) ++stages_of[id.value];
  for (int s = 0; s < p.layout.pp; ++s) {
    std::int64_t off = 0;
    for (auto id : stage_params[static_cast<std::size_t>(s)]) {
      const auto& name = micro_graph.tensor(id).name;
      for (int kind = 0; kind < 2; ++kind) {
        const auto& mine = kind == 0 ? stage_grad[static_cast<std::size_t>(s)] : stage_w[static_cast<std::size_t>(s)];
        const auto& theirs = kind == 0 ? r.gradients.at(name) : r.weights.at(name);
        const char* what = kind == 0 ? "gradient" : "weight";
        double scale = 0;  // tp: norm-wise (real_data.hpp)
        if (p.layout.tp > 1 || p.layout.cp > 1 || stages_of[id.value] > 1)
          for (float b : theirs.data) scale = std::max(scale, static_cast<double>(std::fabs(b)));
        for (std::int64_t i = 0; i < theirs.size(); ++i) {
          const float a = mine[static_cast<std::size_t>(off + i)], b = theirs[i];
          const double e = rel_error(a, b, scale);
          if (!(e <= cs.max_rel_error)) {
            cs.max_rel_error = std::isnan(e) ? INFINITY : e;
            cs.worst = fmt::format("{} of '{}'", what, name);
          }
          if (failure.empty() && !(e <= tolerance))
            failure = fmt::format("--check failed at step {}: {} of '{}' element {} is {:.9g}, the reference "
                                  "{:.9g} (relative error {:.3g} > {:.0e})",
                                  step, what, name, i, a, b, e, tolerance);
        }
      }
      off += micro_graph.tensor(id).numel();
    }
  }
  return failure;
}

}  // namespace planner::executor::real_detail
