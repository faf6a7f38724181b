#include "planner/runtime/device.hpp"

namespace planner::runtime {

Result<core::Precision> parse_precision(std::string_view text) {
  if (auto p = core::parse_precision(text); p && *p != core::Precision::fp8) return *p;
  if (text == "fp8")
    return make_error("precision 'fp8': the device backend has no fp8 GEMM (use bf16 or fp16)");
  return make_error("precision '{}' is not one of fp32, tf32, bf16, fp16", text);
}

}  // namespace planner::runtime
