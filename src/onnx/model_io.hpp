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

/// Checks what protobuf does not: a default-domain opset import within the
/// range planner knows (7 to 21), known element types, names that are UTF-8,
/// and raw_data sizes that match their dims.
Status check_model(const pb::ModelProto& m);

/// Escapes control characters (newlines, ANSI escapes) so an error naming a
/// hostile tensor name stays one line.
std::string one_line(std::string_view message);

struct ExternalDataStats {
  int tensors = 0;
  std::set<std::string> files;
};

/// Checks every tensor stored as external data (initializers, constants, in
/// subgraphs too): its location must be a relative path inside the model's
/// folder (no absolute path, no '..'). Nothing is opened.
Result<ExternalDataStats> check_external_data(const pb::ModelProto& m);

}  // namespace planner::onnx::detail
