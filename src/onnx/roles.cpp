// Tensor roles: which tensors are trainable parameters, constants, data
// inputs or activations.
#include <string>

#include "build.hpp"

namespace planner::onnx::detail {

namespace {

using graph::TensorRole;

/// Whether input slot k of a node of this kind holds a weight.
bool weight_slot(std::string_view type, std::size_t k) {
  if (type == "Conv" || type == "ConvTranspose" || type == "FusedConv" || type == "ConvInteger") return k == 1 || k == 2;
  if (type == "MatMul" || type == "FusedMatMul" || type == "TransposeMatMul" || type == "Gemm" || type == "FusedGemm" ||
      type == "Einsum" || type == "MatMulInteger")
    return true;
  if (type == "BatchNormalization" || type == "InstanceNormalization" || type == "LayerNormalization" ||
      type == "SimplifiedLayerNormalization" || type == "GroupNormalization")
    return k == 1 || k == 2;
  if (type == "SkipLayerNormalization" || type == "SkipSimplifiedLayerNormalization") return k >= 2 && k <= 4;
  if (type == "EmbedLayerNormalization") return k >= 2 && k <= 6;
  if (type == "Attention") return k == 1 || k == 2;
  if (type == "Gather") return k == 0;
  if (type == "PRelu") return k == 1;
  if (type == "LSTM" || type == "GRU" || type == "RNN") return k >= 1 && k <= 3;
  return false;
}

/// BatchNormalization running mean/variance: never trained.
bool running_stat_slot(std::string_view type, std::size_t k) {
  return type == "BatchNormalization" && (k == 3 || k == 4);
}

}  // namespace

std::vector<TensorRole> assign_roles(const ParsedGraph& pg, const std::vector<Info>& infos,
                                     const ParamInputFn& param_input, bool is_subgraph,
                                     const OuterRoleFn& outer_role) {
  const std::size_t n = pg.size();
  std::vector<TensorRole> role(n, TensorRole::activation);
  // For each tensor: read only as BN running statistics? read in a weight slot?
  std::vector<char> read_other(n, 0), read_as_weight(n, 0), read_as_stat(n, 0);
  for (const auto& node : pg.nodes) {
    const std::string& type = node.proto->op_type();
    for (std::size_t k = 0; k < node.in.size(); ++k) {
      const int t = node.in[k];
      if (t < 0) continue;
      const auto idx = static_cast<std::size_t>(t);
      if (running_stat_slot(type, k)) read_as_stat[idx] = 1;
      else read_other[idx] = 1;
      if (weight_slot(type, k)) read_as_weight[idx] = 1;
    }
    for (int t : node.implicit) read_other[static_cast<std::size_t>(t)] = 1;
  }
  std::vector<char> const_only(n, 0), param_anc(n, 0);
  for (std::size_t t = 0; t < n; ++t) {
    const int elem = infos[t].elem;
    switch (pg.source[t]) {
      case Source::initializer: {
        const auto numel = infos[t].shape ? checked_numel(*infos[t].shape).value_or(0) : 0;
        const bool stats_only = read_as_stat[t] && !read_other[t];
        // Scalars (epsilons, scales) and BN running statistics are not trained;
        // a one-element weight (the [1] bias of a Gemm to one output) is.
        const bool trained = numel > 1 || (numel == 1 && read_as_weight[t]);
        role[t] = is_float_elem(elem) && !stats_only && trained ? TensorRole::parameter : TensorRole::constant;
        const_only[t] = 1;
        param_anc[t] = role[t] == TensorRole::parameter;
        break;
      }
      case Source::input: {
        const bool p = param_input && param_input(pg.names[t]);
        role[t] = p ? TensorRole::parameter : is_subgraph ? TensorRole::activation : TensorRole::input;
        param_anc[t] = p;
        break;
      }
      case Source::outer: {
        role[t] = outer_role ? outer_role(pg.names[t]) : TensorRole::activation;
        if (role[t] == TensorRole::input) role[t] = TensorRole::activation;
        param_anc[t] = role[t] == TensorRole::parameter;
        const_only[t] = role[t] == TensorRole::constant;
        break;
      }
      case Source::node:
        break;
    }
  }
  for (const auto& node : pg.nodes) {
    bool all_const = true, any_param = false;
    for (int t : node.in)
      if (t >= 0) {
        all_const = all_const && const_only[static_cast<std::size_t>(t)];
        any_param = any_param || param_anc[static_cast<std::size_t>(t)];
      }
    for (int t : node.implicit) {
      all_const = all_const && const_only[static_cast<std::size_t>(t)];
      any_param = any_param || param_anc[static_cast<std::size_t>(t)];
    }
    for (int t : node.out) {
      if (t < 0) continue;
      const auto idx = static_cast<std::size_t>(t);
      const_only[idx] = all_const;
      param_anc[idx] = any_param;
      if (!all_const || any_param) continue;
      const bool stats_only = read_as_stat[idx] && !read_other[idx];
      if (is_float_elem(infos[idx].elem) && read_as_weight[idx] && !stats_only) {
        role[idx] = TensorRole::parameter;
        param_anc[idx] = 1;
      } else {
        role[idx] = TensorRole::constant;
      }
    }
  }
  return role;
}

}  // namespace planner::onnx::detail
