#pragma once
/// The importer's graph view and propagation driver (private to src/onnx/).
///
/// A ParsedGraph indexes one GraphProto (the model's or a subgraph's): every
/// tensor name gets a dense index, every node its resolved inputs/outputs and
/// a unique name, and nodes are listed in dependency order. Propagation walks
/// that order once, applying the rules of infer.hpp, then ONNX's per-node
/// inference, then ONNX's whole-model inference, then declared shapes.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "infer.hpp"

namespace planner::onnx::detail {

/// Opset version per domain ("" = default domain).
using OpsetMap = std::unordered_map<std::string, int>;

enum class Source : std::uint8_t { node, initializer, input, outer };

struct ParsedNode {
  const pb::NodeProto* proto = nullptr;
  std::string name;                ///< unique within the graph
  std::string domain;              ///< "" for the default domain
  int opset = 0;
  std::vector<int> in;             ///< tensor index, -1 for an omitted input
  std::vector<int> out;            ///< tensor index, -1 for an omitted output
  std::vector<int> implicit;       ///< tensors read inside its subgraphs
  bool has_subgraph = false;
};

struct ParsedGraph {
  const pb::GraphProto* proto = nullptr;
  std::vector<std::string_view> names;
  std::unordered_map<std::string_view, int> index;
  std::vector<Source> source;
  std::vector<const pb::TensorProto*> init;          ///< initializer, per tensor
  std::vector<const pb::SparseTensorProto*> sparse;  ///< sparse initializer, per tensor
  std::vector<const pb::ValueInfoProto*> input_decl; ///< graph input declaration, per tensor
  std::vector<const pb::ValueInfoProto*> declared;   ///< value_info/output declaration, per tensor
  std::vector<int> producer;                         ///< index into nodes, -1 if none
  std::vector<int> n_consumers;                      ///< reads by nodes (incl. implicit)
  std::vector<char> is_output;                       ///< listed as a graph output
  std::vector<ParsedNode> nodes;                     ///< dependency order
  std::vector<int> inputs;                           ///< graph inputs, file order (incl. initializers listed)
  std::vector<int> outputs;                          ///< graph outputs

  std::size_t size() const { return names.size(); }
};

/// Indexes `g` and orders its nodes. Names no node, input or initializer
/// defines are errors in the main graph and outer-scope references in a
/// subgraph (`allow_outer`). A cycle is an error naming an op on it.
Result<ParsedGraph> parse_graph(const pb::GraphProto& g, const OpsetMap& opsets, bool allow_outer);

/// How symbolic dims are bound for one propagation run.
struct Bindings {
  /// Symbolic dim name -> value (from --dim, and --batch for leading dims).
  std::map<std::string, std::int64_t, std::less<>> dims;
  /// Graph input name -> value of its unnamed leading dim (--batch).
  std::unordered_map<std::string, std::int64_t> leading;
};

/// Info of a declared value (graph input, value_info): static after binding,
/// or an error naming the tensor, the dim and the flag that binds it.
Result<Info> bind_declared(const pb::ValueInfoProto& vi, const Bindings& b, bool suggest_batch);

/// Static Info from a TypeProto whose dims are all concrete.
std::optional<Info> static_info(const pb::TypeProto& tp);

/// The enclosing graph of a subgraph, for outer-scope names.
struct Scope {
  const ParsedGraph* graph = nullptr;
  const std::vector<Info>* infos = nullptr;
  const Scope* parent = nullptr;
};

struct RunOptions {
  const Bindings* bindings = nullptr;
  const OpsetMap* opsets = nullptr;
  /// Lenient runs (the batch-axis probe) leave unresolvable tensors unknown
  /// instead of failing.
  bool lenient = false;
  /// Lazily computed whole-model ONNX inference (main graph only; may be empty).
  std::function<const std::unordered_map<std::string, Info>*()> whole_model;
};

/// Propagates Infos through `pg`. `infos` must have pg.size() entries with
/// the graph inputs already set; initializers, outer names and node outputs
/// are filled here.
Status propagate(const ParsedGraph& pg, std::vector<Info>& infos, const Scope* parent, const RunOptions& opt);

/// A propagated subgraph.
struct SubgraphRun {
  ParsedGraph graph;
  std::vector<Info> infos;
  std::vector<Info> outputs() const;
};

/// Parses and propagates a subgraph given the Infos of its formal inputs
/// (positional; missing ones are bound from their declarations).
Result<SubgraphRun> run_subgraph(const pb::GraphProto& g, std::vector<Info> formal, const Scope& outer,
                                 const RunOptions& opt);

/// ONNX whole-model inference (see onnx_fallback.cpp): name -> static Info.
std::unordered_map<std::string, Info> onnx_infer_model(const pb::ModelProto& model, const ParsedGraph& pg,
                                                       const std::vector<Info>& infos);

/// "Type" or "domain:Type".
std::string node_kind(const ParsedNode& n);

}  // namespace planner::onnx::detail
