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

namespace {

constexpr std::int64_t kMinOpset = 7;
// ONNX 1.12 (Debian) knows opsets up to 17; the own shape rules also follow
// the opset 18 changes (Split num_outputs, Reduce axes as input), and an op
// they lack fails by name rather than guessing.
constexpr std::int64_t kMaxOpset = 21;

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;  // continuation bytes that follow
    if (c < 0x80) n = 0;
    else if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if ((c >> 4) == 0xE) n = 2;
    else if (c >= 0xF0 && c <= 0xF4) n = 3;
    else return false;
    if (n > s.size() - i - 1) return false;
    for (std::size_t k = 1; k <= n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n + 1;
  }
  return true;
}

Status check_name(std::string_view name, std::string_view what) {
  if (!valid_utf8(name)) return make_error("{} name '{}' is not valid UTF-8", what, one_line(name));
  return Status::success();
}

std::size_t fixed_elem_bytes(int e) {
  switch (e) {
    case pb::TensorProto::FLOAT: case pb::TensorProto::INT32: case pb::TensorProto::UINT32: return 4;
    case pb::TensorProto::DOUBLE: case pb::TensorProto::INT64: case pb::TensorProto::UINT64:
    case pb::TensorProto::COMPLEX64: return 8;
    case pb::TensorProto::COMPLEX128: return 16;
    case pb::TensorProto::FLOAT16: case pb::TensorProto::BFLOAT16: case pb::TensorProto::INT16:
    case pb::TensorProto::UINT16: return 2;
    case pb::TensorProto::INT8: case pb::TensorProto::UINT8: case pb::TensorProto::BOOL: return 1;
    default: return 0;  // strings and unknown types have no fixed size
  }
}

Status check_elem_type(int e, std::string_view what, std::string_view name) {
  if (e != 0 && !pb::TensorProto_DataType_IsValid(e))
    return make_error("{} '{}' has element type {}, which ONNX does not define", what, one_line(name), e);
  return Status::success();
}

Status check_value_info(const pb::ValueInfoProto& v, std::string_view what) {
  PLANNER_TRY_STATUS(check_name(v.name(), what));
  if (v.type().has_tensor_type()) PLANNER_TRY_STATUS(check_elem_type(v.type().tensor_type().elem_type(), what, v.name()));
  return Status::success();
}

Status check_tensor_data(const pb::TensorProto& t, std::string_view what) {
  PLANNER_TRY_STATUS(check_name(t.name(), what));
  PLANNER_TRY_STATUS(check_elem_type(t.data_type(), what, t.name()));
  if (t.data_location() == pb::TensorProto::EXTERNAL || !t.has_raw_data()) return Status::success();
  const std::size_t eb = fixed_elem_bytes(t.data_type());
  if (eb == 0) return Status::success();
  std::uint64_t numel = 1;
  for (auto d : t.dims()) {
    if (d < 0) return Status::success();  // negative dims are reported with their tensor later
    if (d != 0 && numel > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(d)) return Status::success();
    numel *= static_cast<std::uint64_t>(d);
  }
  if (numel > (std::uint64_t{1} << 58)) return Status::success();
  if (t.raw_data().size() != numel * eb)
    return make_error("{} '{}': raw_data holds {} bytes but its dims need {} ({} elements of {} bytes)", what,
                      one_line(t.name()), t.raw_data().size(), numel * eb, numel, eb);
  return Status::success();
}

Status check_graph_content(const pb::GraphProto& g, int depth) {
  if (depth > 64) return make_error("subgraphs nested more than 64 deep");
  for (const auto& v : g.input()) PLANNER_TRY_STATUS(check_value_info(v, "graph input"));
  for (const auto& v : g.output()) PLANNER_TRY_STATUS(check_value_info(v, "graph output"));
  for (const auto& v : g.value_info()) PLANNER_TRY_STATUS(check_value_info(v, "value_info"));
  for (const auto& t : g.initializer()) PLANNER_TRY_STATUS(check_tensor_data(t, "initializer"));
  for (const auto& n : g.node()) {
    PLANNER_TRY_STATUS(check_name(n.name(), "op"));
    PLANNER_TRY_STATUS(check_name(n.op_type(), "op type"));
    PLANNER_TRY_STATUS(check_name(n.domain(), "op domain"));
    for (const auto& s : n.input()) PLANNER_TRY_STATUS(check_name(s, "tensor"));
    for (const auto& s : n.output()) PLANNER_TRY_STATUS(check_name(s, "tensor"));
    for (const auto& a : n.attribute()) {
      if (a.has_t()) PLANNER_TRY_STATUS(check_tensor_data(a.t(), "constant"));
      if (a.has_g()) PLANNER_TRY_STATUS(check_graph_content(a.g(), depth + 1));
      for (const auto& sg : a.graphs()) PLANNER_TRY_STATUS(check_graph_content(sg, depth + 1));
    }
  }
  return Status::success();
}

}  // namespace

std::string one_line(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (char ch : message) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02x}", c);
    else out += ch;
  }
  return out;
}

Status check_model(const pb::ModelProto& m) {
  if (m.opset_import_size() == 0)
    return make_error("the model declares no opset_import: which operator set its ops follow is unknown");
  bool default_domain = false;
  for (const auto& o : m.opset_import()) {
    if (!o.domain().empty() && o.domain() != "ai.onnx") continue;
    default_domain = true;
    if (o.version() < kMinOpset || o.version() > kMaxOpset)
      return make_error("ai.onnx opset {} is not supported: planner knows opsets {} to {} (convert the model with "
                        "onnx.version_converter)",
                        o.version(), kMinOpset, kMaxOpset);
  }
  (void)default_domain;  // a graph of contrib-domain ops only needs no default-domain import
  return check_graph_content(m.graph(), 0);
}

Result<ExternalDataStats> check_external_data(const pb::ModelProto& m) {
  ExternalDataStats stats;
  PLANNER_TRY_STATUS(check_graph(m.graph(), stats, 0));
  return stats;
}

}  // namespace planner::onnx::detail
