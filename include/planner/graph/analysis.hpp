#pragma once
/// Structural analysis of an imported graph:
///  - attention patterns (Q*K^T, scale, mask, Softmax, *V in exporter
///    spellings, or one fused com.microsoft Attention op) become FusedPattern
///    entries so the cost model can price them as one FlashAttention-style
///    kernel or as separate ops;
///  - repeated blocks: structurally identical consecutive subgraphs (the 96
///    layers of a GPT, the blocks of a ResNet stage) get layer numbers;
///  - recompute modules: normalisations and experts' activations, the units
///    Megatron-Core's selective recompute can drop (`--recompute-modules`).

#include <optional>
#include <string_view>

#include "planner/graph/graph.hpp"

namespace planner::graph {

/// Finds attention patterns; fills g.fused and each op's fused_group.
void find_attention(OpGraph& g);

/// Finds runs of repeated blocks; fills g.blocks and each op's layer.
/// Requires: ops are in topological order.
void find_repeated_blocks(OpGraph& g);

/// The expert index in an op name, or nullopt: the path segment
/// `experts.<n>` (or `experts/<n>`, `experts_<n>`), as `planner model moe`
/// names them (`layers.3/moe/experts.5/fc1/MatMul`) and as the PyTorch
/// exporters of Switch, Mixtral and DeepSeek-MoE do (`...experts.5.w1...`).
std::optional<int> expert_index(std::string_view op_name);

/// Fills each op's norm_unit and expert_act_unit (graph.hpp):
///  - a norm unit is one op of class normalization, or a decomposed norm: a
///    ReduceMean over the last axis (keeping it) with the elementwise ops and
///    ReduceMeans that read, directly or through one another, only the
///    norm's input x and parameters or constants (x*x or (x-mean)^2, the
///    mean, + eps, sqrt, the division, the weight and bias); of those, the
///    ones Megatron-Core's `layernorm` module recomputes: inside a layer (not
///    outside_layers: the final norm is no layer's), and not read, past
///    views, by GEMMs alone. Transformer Engine fuses such a norm into the
///    linear layer (TELayerNormColumnParallelLinear: a layer's input norm
///    into its QKV projection, a dense layer's pre-MLP norm into fc1), which
///    keeps the norm's output as before; a MoE layer's pre-MLP norm, read by
///    the router and the token dispatch, stays a module
///    (megatron/core/models/gpt/gpt_layer_specs.py);
///  - an expert activation unit is, per layer and expert, the elementwise ops
///    of that expert (expert_index) outside attention patterns that read only
///    the outputs of the expert's GEMMs, of one another, and parameters or
///    constants, and whose output reaches one of the expert's GEMMs.
void find_recompute_modules(OpGraph& g);

/// Some op of `g` is in an expert activation unit (find_recompute_modules).
bool has_expert_activations(const OpGraph& g);

/// True when a framework that fuses elementwise chains (Megatron's and
/// DeepSpeed's fused kernels) keeps tensor `t` in registers: its producer
/// and its only consumer are elementwise ops outside any fused pattern, `t`
/// is floating point and has as many elements as the consumer's output.
/// The cost model and the replay executor drop such tensors' traffic.
bool fusible_elementwise_edge(const Tensor& t, const OpGraph& g);

/// All of the above.
inline void analyze(OpGraph& g) {
  g.drop_derived();
  find_attention(g);
  find_repeated_blocks(g);
  find_recompute_modules(g);
}

}  // namespace planner::graph
