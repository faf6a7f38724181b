#pragma once
// A modelgen model imported as the executor and runtime tests need it
// (batch 2, shape-only: weights declared external). Used by fixtures.hpp and
// the runtime_cuda tests.

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "planner/graph/graph.hpp"
#include "planner/modelgen/modelgen.hpp"
#include "planner/onnx/importer.hpp"

namespace planner::executor::testing {

// A transformer's shape for modelgen (kv_heads 0 = heads).
inline modelgen::ModelSpec spec(modelgen::Arch arch, int layers, std::int64_t hidden, std::int64_t heads,
                                std::int64_t seq, std::int64_t vocab, int kv_heads = 0) {
  modelgen::ModelSpec s;
  s.arch = arch;
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.seq = seq;
  s.vocab = vocab;
  return s;
}

// Imports a modelgen model of batch 2 (shape-only: weights declared external).
inline graph::OpGraph build_graph(modelgen::ModelSpec s, const std::string& name) {
  s.batch = 2;
  auto built = modelgen::build(s, name + ".data");
  if (!built) FAIL(built.error().message);
  onnx::ImportOptions o;
  o.batch = 2;
  auto m = onnx::import_bytes(built->bytes, name, std::filesystem::temp_directory_path(), o);
  if (!m) FAIL(m.error().message);
  return std::move(m->graph);
}

}  // namespace planner::executor::testing
