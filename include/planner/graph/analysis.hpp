#pragma once
/// Structural analysis of an imported graph:
///  - attention patterns (Q*K^T, scale, mask, Softmax, *V in exporter
///    spellings, or one fused com.microsoft Attention op) become FusedPattern
///    entries so the cost model can price them as one FlashAttention-style
///    kernel or as separate ops;
///  - repeated blocks: structurally identical consecutive subgraphs (the 96
///    layers of a GPT, the blocks of a ResNet stage) get layer numbers.

#include "planner/graph/graph.hpp"

namespace planner::graph {

/// Finds attention patterns; fills g.fused and each op's fused_group.
void find_attention(OpGraph& g);

/// Finds runs of repeated blocks; fills g.blocks and each op's layer.
/// Requires: ops are in topological order.
void find_repeated_blocks(OpGraph& g);

/// True when a framework that fuses elementwise chains (Megatron's and
/// DeepSpeed's fused kernels) keeps tensor `t` in registers: its producer
/// and its only consumer are elementwise ops outside any fused pattern, `t`
/// is floating point and has as many elements as the consumer's output.
/// The cost model and the replay executor drop such tensors' traffic.
bool fusible_elementwise_edge(const Tensor& t, const OpGraph& g);

/// Both of the above.
inline void analyze(OpGraph& g) {
  g.drop_derived();
  find_attention(g);
  find_repeated_blocks(g);
}

}  // namespace planner::graph
