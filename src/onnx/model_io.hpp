#pragma once
/// Parsing ModelProto bytes and checking external-data references
/// (private to src/onnx/). External data files are never opened.

#include <set>
#include <string>
#include <string_view>

#include "infer.hpp"
#include "planner/onnx/importer.hpp"

namespace planner::onnx::detail {

/// Parses serialized ModelProto bytes. Errors (without the file label): empty
/// input, 2 GiB or more, protobuf failure, no graph.
Result<pb::ModelProto> parse_model(std::string_view bytes);

struct ExternalDataStats {
  int tensors = 0;
  std::set<std::string> files;
};

/// Checks every tensor stored as external data (initializers, constants, in
/// subgraphs too): its location must be a relative path inside the model's
/// folder (no absolute path, no '..'). Nothing is opened.
Result<ExternalDataStats> check_external_data(const pb::ModelProto& m);

}  // namespace planner::onnx::detail
