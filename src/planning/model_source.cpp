// The model at every micro-batch the layout search tries (model_source.hpp).

#include "planner/planning/model_source.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace planner::planning {

std::int64_t graph_batch(const graph::OpGraph& g) {
  for (auto id : g.graph_inputs) {
    const auto& t = g.tensor(id);
    if (t.role == graph::TensorRole::input && t.batch_axis && *t.batch_axis < static_cast<int>(t.shape.size()))
      return std::max<std::int64_t>(1, t.shape[static_cast<std::size_t>(*t.batch_axis)]);
  }
  return 1;
}

Result<ModelSource> ModelSource::open(std::string path, onnx::ImportOptions opts) {
  ModelSource s;
  s.path_ = std::move(path);
  s.opts_ = std::move(opts);
  // The importer rebinds a static batch to the requested one (scaling the
  // batch axes) unless some size does not follow the batch: only such a
  // model keeps its batch.
  auto probe_opts = s.opts_;
  if (!probe_opts.batch) probe_opts.batch = kProbeBatch;
  PLANNER_TRY(onnx::ImportedModel probe, onnx::import_file(s.path_, probe_opts));
  s.probed_ = graph_batch(probe.graph);
  s.static_batch_ = probe.report.static_batch;
  s.pinned_ = s.probed_ != *probe_opts.batch;  // a batch that does not follow the requested one
  for (const auto& n : probe.report.notes)
    if (auto k = n.find("(cannot rebind: "); k != std::string::npos && s.why_pinned_.empty())
      s.why_pinned_ = n.substr(k);
  if (s.pinned_ || s.opts_.batch)
    s.graphs_[static_cast<int>(s.probed_)] = std::make_unique<onnx::ImportedModel>(std::move(probe));
  return s;
}

std::optional<int> ModelSource::fixed_micro_batch() const {
  if (pinned_) return static_cast<int>(probed_);
  if (opts_.batch) return static_cast<int>(*opts_.batch);
  return std::nullopt;
}

Result<const graph::OpGraph*> ModelSource::graph_at(int mb) {
  auto it = graphs_.find(mb);
  if (it == graphs_.end()) {
    auto o = opts_;
    o.batch = mb;
    PLANNER_TRY(onnx::ImportedModel m, onnx::import_file(path_, o));
    it = graphs_.emplace(mb, std::make_unique<onnx::ImportedModel>(std::move(m))).first;
  }
  return &it->second->graph;
}

std::vector<std::string> ModelSource::notes_at(int mb, bool global_batch_given, int devices) const {
  const auto git = graphs_.find(mb);
  std::vector<std::string> notes = git != graphs_.end() ? git->second->report.notes : std::vector<std::string>{};
  std::erase_if(notes, [&](const std::string& n) {
    return n.find(fmt::format("--batch {}", kProbeBatch)) != std::string::npos ||
           n.find("the model's batch is static") != std::string::npos;
  });
  // A micro-batch the search could not choose is always announced, with why.
  if (pinned_)
    notes.push_back(fmt::format("the model's batch is static ({}): the micro-batch is fixed to it {}", probed_,
                                !why_pinned_.empty() ? why_pinned_
                                : static_batch_      ? std::string("(the importer could not rebind it)")
                                                     : std::string("(its data inputs lead with different static dims, "
                                                                   "so none is the batch to rebind)")));
  else if (static_batch_ && !opts_.batch)
    notes.push_back(fmt::format("the model's batch is static ({}): the graph is rebound to each micro-batch tried "
                                "(batch axes scaled){}",
                                *static_batch_,
                                global_batch_given ? std::string()
                                                   : fmt::format("; global batch {} x {} devices", *static_batch_, devices)));
  else if (static_batch_ && *opts_.batch != *static_batch_)
    notes.push_back(fmt::format("the model's batch is static ({}): rebound to `batch` {} (batch axes scaled)",
                                *static_batch_, *opts_.batch));
  if (!pinned_ && opts_.batch)
    notes.push_back(fmt::format("the micro-batch is fixed to `batch` {}; leave `batch` out to search micro-batches",
                                *opts_.batch));
  return notes;
}

}  // namespace planner::planning
