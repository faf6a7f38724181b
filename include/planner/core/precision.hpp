#pragma once
/// Arithmetic precisions of a GEMM (the tensor-core input type and compute
/// mode), one vocabulary for the cost model (cluster profiles' peak_tflops
/// keys, cost::PrecisionPolicy) and the devices that run them
/// (runtime::Device, which has no fp8 GEMM).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace planner::core {

/// The enumerator order indexes per-precision arrays (profile peaks, the
/// samples of a device sweep); a device runs the first four (no fp8).
enum class Precision : std::uint8_t {
  fp32,  ///< fp32 data, fp32 FMA (no tensor cores)
  tf32,  ///< fp32 data, tf32 tensor cores
  bf16,  ///< bf16 data, fp32 accumulation
  fp16,  ///< fp16 data, fp32 accumulation
  fp8,   ///< fp8 data (cost model only)
};
inline constexpr std::size_t kPrecisionCount = 5;
/// Every precision, in enumerator order.
inline constexpr std::array<Precision, kPrecisionCount> kPrecisions{
    Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16, Precision::fp8,
};

/// "fp32", "tf32", "bf16", "fp16", "fp8" (the keys of a profile's
/// peak_tflops, the plan's training.precision).
std::string_view precision_name(Precision p);
/// Parses precision_name() output back; nullopt for any other text.
std::optional<Precision> parse_precision(std::string_view name);
/// Bytes per input element: 4 for fp32/tf32, 2 for bf16/fp16, 1 for fp8.
int precision_bytes(Precision p);

}  // namespace planner::core
