#pragma once
// Test helpers for modelgen: parse the bytes back with protobuf, count
// parameters, run the ONNX checker and strict shape inference.
//
// The ONNX headers need the definitions the `onnx` CMake target carries; the
// test links libonnx through planner_onnx.
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#ifndef ONNX_ML
#define ONNX_ML 1
#endif

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <set>
#include <string>
#include <unistd.h>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "planner/modelgen/modelgen.hpp"

namespace modelgen_test {

inline onnx::ModelProto parse(const std::string& bytes) {
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) throw std::runtime_error("ModelProto does not parse");
  return m;
}

inline std::int64_t numel(const onnx::TensorProto& t) {
  std::int64_t n = 1;
  for (auto d : t.dims()) n *= d;
  return n;
}

/// Elements of every FLOAT initializer.
inline std::int64_t float_params(const onnx::ModelProto& m) {
  std::int64_t n = 0;
  for (const auto& t : m.graph().initializer())
    if (t.data_type() == onnx::TensorProto::FLOAT) n += numel(t);
  return n;
}

/// A fresh empty folder under the system temp folder.
inline std::filesystem::path temp_dir() {
  static std::atomic<int> counter{0};
  auto p = std::filesystem::temp_directory_path() /
           ("planner_modelgen_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

/// Throws unless the model passes onnx::checker::check_model (1.12 stats the
/// external data file, so an empty stand-in is created beside a copy of the
/// model) and strict shape inference gives every node output a fully static
/// shape. Returns the number of node outputs checked.
inline int check_with_onnx(const std::string& bytes) {
  auto m = parse(bytes);
  auto dir = temp_dir();
  std::set<std::string> locations;
  for (const auto& t : m.graph().initializer())
    for (const auto& e : t.external_data())
      if (e.key() == "location") locations.insert(e.value());
  for (const auto& l : locations) std::ofstream(dir / l).flush();
  const auto path = dir / "model.onnx";
  std::ofstream(path, std::ios::binary) << bytes;
  onnx::checker::check_model(path.string());
  std::filesystem::remove_all(dir);

  onnx::ShapeInferenceOptions opts(/*check_type=*/true, /*strict=*/1, /*data_prop=*/false);
  onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), opts);
  std::map<std::string, const onnx::TypeProto*> types;
  for (const auto& v : m.graph().value_info()) types[v.name()] = &v.type();
  for (const auto& v : m.graph().output()) types[v.name()] = &v.type();
  int checked = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == "Constant") continue;  // static by construction
    for (const auto& o : n.output()) {
      auto it = types.find(o);
      if (it == types.end() || !it->second->tensor_type().has_shape())
        throw std::runtime_error("no inferred shape for " + o + " of " + n.name());
      for (const auto& d : it->second->tensor_type().shape().dim())
        if (!d.has_dim_value()) throw std::runtime_error("non-static dim in " + o + " of " + n.name());
      ++checked;
    }
  }
  return checked;
}

}  // namespace modelgen_test
