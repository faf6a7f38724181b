#include "planner/runtime/device.hpp"

namespace planner::runtime {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

std::size_t precision_size(Precision p) {
  return p == Precision::bf16 || p == Precision::fp16 ? 2 : 4;
}

Result<Precision> parse_precision(std::string_view text) {
  for (int i = 0; i < kPrecisionCount; ++i)
    if (precision_name(static_cast<Precision>(i)) == text) return static_cast<Precision>(i);
  if (text == "fp8")
    return make_error("precision 'fp8': the device backend has no fp8 GEMM (use bf16 or fp16)");
  return make_error("precision '{}' is not one of fp32, tf32, bf16, fp16", text);
}

}  // namespace planner::runtime
