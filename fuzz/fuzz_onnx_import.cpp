// libFuzzer target: planner::onnx::import_bytes on arbitrary bytes.
//
// Oracle, beyond "no crash, no hang, no leak, no UB" (ASan + UBSan):
//   - a failed import reports one non-empty line that starts with the label;
//   - a successful import has no negative dim and finite, non-negative totals
//     (a silently wrong plan starts with a NaN or a wrapped-around count).
// Options bind the symbolic dims the seed models use (tests/bad_inputs,
// models/, ../shared/models/real), so valid seeds import and mutations reach
// shape propagation, costing and analysis rather than stopping at "unbound dim".

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fuzz_oracle.hpp"
#include "planner/graph/graph.hpp"
#include "planner/onnx/importer.hpp"

namespace {

const planner::onnx::ImportOptions& options() {
  static const planner::onnx::ImportOptions opts = [] {
    planner::onnx::ImportOptions o;
    o.batch = 2;
    for (const char* name : {"seq", "seq_len", "seqlen", "max_seq_len_in_batch", "total_seq_len",
                             "inputs_attention_mask_dim1", "inputs_labels_dim1"})
      o.dims[name] = 8;
    o.dims["past_seq_len"] = 4;
    o.dims["dynamic_prediction_count"] = 4;
    return o;
  }();
  return opts;
}

[[noreturn]] void violated(const char* what, std::string_view detail) {
  fuzz_oracle::violated("fuzz_onnx_import", what, detail);
}

bool bad_number(double x) { return !std::isfinite(x) || x < 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::string_view kLabel = "fuzz.onnx";
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // base_dir does not exist: external data must never be opened anyway.
  auto r = planner::onnx::import_bytes(bytes, kLabel, "/nonexistent/planner-fuzz", options());
  if (!r) {
    const std::string& m = r.error().message;
    fuzz_oracle::check_error("fuzz_onnx_import", m, kLabel);
    return 0;
  }
  const auto& g = r->graph;
  for (const auto& t : g.tensors())
    for (auto d : t.shape)
      if (d < 0) violated("negative dim after a successful import", t.name);
  const auto tot = planner::graph::totals(g);
  if (tot.parameter_count < 0) violated("negative parameter count", "");
  if (bad_number(tot.parameter_bytes.value)) violated("parameter bytes", "not finite or negative");
  if (bad_number(tot.forward_flops.value)) violated("forward FLOPs", "not finite or negative");
  if (bad_number(tot.training_flops.value)) violated("training FLOPs", "not finite or negative");
  if (bad_number(tot.activation_bytes.value)) violated("activation bytes", "not finite or negative");
  return 0;
}
