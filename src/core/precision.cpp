// GEMM precisions (header: core/precision.hpp).

#include "planner/core/precision.hpp"

namespace planner::core {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::fp8: return "fp8";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (Precision p : kPrecisions)
    if (precision_name(p) == name) return p;
  return std::nullopt;
}

int precision_bytes(Precision p) {
  switch (p) {
    case Precision::fp32:
    case Precision::tf32: return 4;
    case Precision::bf16:
    case Precision::fp16: return 2;
    case Precision::fp8: return 1;
  }
  return 4;
}

}  // namespace planner::core
