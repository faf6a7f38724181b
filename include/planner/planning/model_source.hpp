#pragma once
/// The model at every micro-batch the layout search tries.
///
/// The search scores layouts at several micro-batches, and the operator
/// graph depends on the batch (the importer binds it to every batch axis).
/// ModelSource imports the file once at an unlikely batch (a prime) to learn
/// whether its batch is static and whether the importer can rebind it, then
/// once per micro-batch asked for, cached. A model whose batch cannot follow
/// the requested one (or a batch the user bound) pins the micro-batch.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "planner/core/result.hpp"
#include "planner/graph/graph.hpp"
#include "planner/onnx/importer.hpp"

namespace planner::planning {

/// The batch of the graph's first data input with a batch axis (1 if none).
std::int64_t graph_batch(const graph::OpGraph& g);

class ModelSource {
 public:
  /// The batch the probe import binds when none is given.
  static constexpr std::int64_t kProbeBatch = 9973;

  /// Imports `path` once under `opts` (at opts.batch, else at kProbeBatch).
  /// Errors: the importer's, naming the file.
  static Result<ModelSource> open(std::string path, onnx::ImportOptions opts);

  /// The micro-batch every layout must use: the batch the user bound
  /// (opts.batch) or a static batch that does not follow the requested one.
  std::optional<int> fixed_micro_batch() const;
  /// The file's static batch, if it has one (rebindable or not).
  std::optional<std::int64_t> static_batch() const { return static_batch_; }
  /// The batch the importer could not rebind (the micro-batch is pinned to it).
  bool pinned() const { return pinned_; }

  /// The graph at micro-batch `mb` (imported on first use, then cached).
  Result<const graph::OpGraph*> graph_at(int mb);

  /// The importer's notes for the graph at `mb` (those about the probe
  /// batch left out), plus one note that says how the micro-batch relates to
  /// the file's batch when it is static or bound; `global_batch_given` and
  /// `devices` complete the default global batch it mentions.
  std::vector<std::string> notes_at(int mb, bool global_batch_given, int devices) const;

  const std::string& path() const { return path_; }
  const onnx::ImportOptions& options() const { return opts_; }

 private:
  ModelSource() = default;
  std::string path_;
  onnx::ImportOptions opts_;
  std::int64_t probed_ = 1;
  std::optional<std::int64_t> static_batch_;
  bool pinned_ = false;
  std::string why_pinned_;
  std::map<int, std::unique_ptr<onnx::ImportedModel>> graphs_;
};

}  // namespace planner::planning
