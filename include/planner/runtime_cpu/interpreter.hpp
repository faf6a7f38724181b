#pragma once
/// The single-device interpreter: runs a graph::OpGraph forward, backward
/// (reverse mode over the op list) and through one optimizer step, on
/// parameters and inputs drawn from a seed.
///
/// What it draws (rng.hpp, keyed by tensor name, so a sharded run draws the
/// same numbers for its slice):
///   - parameters: normal(0, stddev), except rank-1 parameters named
///     "*.bias" (zeros) and other rank-1 parameters (ones: norm scales);
///     with `jitter`, those ones and zeros get normal(0, stddev) added;
///   - float graph inputs: normal(0, 1);
///   - integer graph inputs (ids, labels): uniform in [0, bound), bound the
///     smallest table they index: a Gather's data along its axis or a
///     SoftmaxCrossEntropyLoss's class count, followed through Reshape,
///     Flatten, Squeeze, Unsqueeze and Identity;
///   - constants: their values from the importer (graph::Tensor::values).
/// The loss is the graph output named "loss", else the only scalar fp32
/// graph output. Every value of the forward pass is kept for backward.
///
/// The graph must outlive the interpreter.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"
#include "planner/runtime_cpu/op_kernels.hpp"
#include "planner/runtime_cpu/optim.hpp"

namespace planner::runtime_cpu {

struct InterpreterOptions {
  std::uint64_t seed = 0;
  /// Standard deviation of the normal parameters.
  float stddev = 0.02f;
  /// Also perturb the parameters that start as ones or zeros.
  bool jitter = false;
};

using OptimizerConfig = std::variant<SgdConfig, AdamWConfig>;

struct StepResult {
  /// Loss before the update.
  double loss = 0.0;
  /// Gradient of every parameter, by name.
  std::map<std::string, Tensor> gradients;
  /// Every parameter after the update, by name.
  std::map<std::string, Tensor> weights;
};

/// The smallest table an integer input indexes: a Gather's data along its
/// axis or a SoftmaxCrossEntropyLoss's class count, followed through
/// shape-only ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity); nullopt
/// when it indexes nothing. Synthetic ids and labels are drawn below it.
std::optional<std::int64_t> index_bound(const graph::OpGraph& g, graph::TensorId input);

class Interpreter {
 public:
  /// Checks that every op has a kernel, every constant its values and the
  /// graph a loss; draws parameters and inputs. Errors name the op or tensor.
  static Result<Interpreter> create(const graph::OpGraph& g, const InterpreterOptions& opt);

  /// Runs every op; returns the loss.
  Result<double> forward();
  /// Reverse mode from d loss = 1. Requires: forward() succeeded since the
  /// parameters last changed. Returns the gradient of every parameter.
  Result<std::map<std::string, Tensor>> backward();
  /// forward, backward, then the optimizer on every parameter.
  Result<StepResult> train_step(const OptimizerConfig& optimizer);

  /// Parameter names, sorted.
  std::vector<std::string> parameter_names() const;
  /// A parameter's current values (tests perturb them); nullptr if unknown.
  Tensor* parameter(std::string_view name);
  /// Replaces the drawn value of the graph input `name` (a caller that feeds
  /// its own rows, e.g. one micro-batch of a larger batch). Errors name the
  /// input: unknown, or another shape or dtype than the graph's.
  Status set_input(std::string_view name, Value v);
  /// The value of a tensor after forward(); nullptr if not computed.
  const Value* value(graph::TensorId id) const;
  graph::TensorId loss_tensor() const { return loss_; }

 private:
  Interpreter(const graph::OpGraph& g) : g_(&g) {}
  Status init(const InterpreterOptions& opt);

  const graph::OpGraph* g_;
  std::vector<graph::OpId> order_;
  std::vector<std::optional<Value>> values_;  ///< per tensor
  std::vector<bool> needs_grad_;              ///< per tensor: depends on a parameter
  std::map<std::string, graph::TensorId, std::less<>> params_;
  std::map<std::string, OptimState> optim_;
  graph::TensorId loss_;
};

}  // namespace planner::runtime_cpu
