#pragma once
// The executor tests' inputs: the plan fixtures of tests/executor/data/
// (written by gen_plans.sh with `planner estimate`) and the tiny GPT they
// were made for, rebuilt in code with modelgen (4 layers, hidden 64, 4 heads,
// sequence 32, vocabulary 128, batch 2).

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "planner/core/io.hpp"
#include "planner/graph/graph.hpp"
#include "planner/modelgen/modelgen.hpp"
#include "planner/onnx/importer.hpp"
#include "planner/plan/plan.hpp"
#include "model_import.hpp"

namespace planner::executor::testing {

inline plan::Plan load_plan(const std::string& name) {
  const std::string path = std::string(PLANNER_EXECUTOR_DATA) + "/" + name;
  auto text = io::read_file(path);
  if (!text) FAIL(text.error().message);
  auto p = plan::from_json(*text, path);
  if (!p) FAIL(p.error().message);
  return *p;
}

inline const graph::OpGraph& tiny_gpt() {
  static const graph::OpGraph g = build_graph(spec(modelgen::Arch::gpt, 4, 64, 4, 32, 128), "tiny.onnx");
  return g;
}

}  // namespace planner::executor::testing
