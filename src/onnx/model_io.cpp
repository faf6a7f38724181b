// Reading and parsing ModelProto bytes; external-data checks (never opening
// the external files).
#include <climits>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "model_io.hpp"

namespace planner::onnx::detail {

Result<pb::ModelProto> parse_model(std::string_view bytes) {
  if (bytes.empty()) return make_error("the file is empty, not an ONNX model");
  if (bytes.size() > kMaxProtoBytes)
    return make_error(
        "{:.2f} GiB: protobuf cannot parse a single ONNX file of 2 GiB or more; save the model with its weights "
        "as external data (onnx.save_model(model, path, save_as_external_data=True))",
        static_cast<double>(bytes.size()) / (1024.0 * 1024.0 * 1024.0));
  pb::ModelProto m;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT_MAX);
  if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    return make_error("not a valid ONNX model: protobuf parsing failed (truncated or corrupt file?)");
  if (!m.has_graph()) return make_error("not an ONNX model: it has no graph");
  if (m.ir_version() <= 0 && m.opset_import_size() == 0)
    return make_error("not an ONNX model: it has neither an IR version nor an opset import");
  return m;
}

namespace {

bool escapes_folder(const std::string& loc) {
  if (loc.empty()) return true;
  if (loc.front() == '/' || loc.front() == '\\') return true;
  if (loc.size() >= 2 && loc[1] == ':') return true;  // "C:..." drive paths
  std::size_t start = 0;
  for (std::size_t k = 0; k <= loc.size(); ++k)
    if (k == loc.size() || loc[k] == '/' || loc[k] == '\\') {
      if (loc.compare(start, k - start, "..") == 0 && k - start == 2) return true;
      start = k + 1;
    }
  return false;
}

Status check_tensor(const pb::TensorProto& t, std::string_view what, ExternalDataStats& stats) {
  if (t.data_location() != pb::TensorProto::EXTERNAL) return Status::success();
  std::string location;
  for (const auto& kv : t.external_data())
    if (kv.key() == "location") location = kv.value();
  if (location.empty())
    return make_error("{} '{}' is stored as external data but names no location", what, t.name());
  if (escapes_folder(location))
    return make_error("{} '{}' points its external data to '{}', outside the model's folder: refused", what, t.name(),
                      location);
  ++stats.tensors;
  stats.files.insert(location);
  return Status::success();
}

Status check_graph(const pb::GraphProto& g, ExternalDataStats& stats, int depth) {
  if (depth > 64) return make_error("subgraphs nested more than 64 deep");
  for (const auto& t : g.initializer()) PLANNER_TRY_STATUS(check_tensor(t, "initializer", stats));
  for (const auto& t : g.sparse_initializer()) {
    PLANNER_TRY_STATUS(check_tensor(t.values(), "sparse initializer", stats));
    PLANNER_TRY_STATUS(check_tensor(t.indices(), "sparse initializer", stats));
  }
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_t()) PLANNER_TRY_STATUS(check_tensor(a.t(), "constant", stats));
      for (const auto& t : a.tensors()) PLANNER_TRY_STATUS(check_tensor(t, "constant", stats));
      if (a.has_g()) PLANNER_TRY_STATUS(check_graph(a.g(), stats, depth + 1));
      for (const auto& sg : a.graphs()) PLANNER_TRY_STATUS(check_graph(sg, stats, depth + 1));
    }
  return Status::success();
}

}  // namespace

Result<ExternalDataStats> check_external_data(const pb::ModelProto& m) {
  ExternalDataStats stats;
  PLANNER_TRY_STATUS(check_graph(m.graph(), stats, 0));
  return stats;
}

}  // namespace planner::onnx::detail
