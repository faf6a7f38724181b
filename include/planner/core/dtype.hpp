#pragma once
/// Element types: of graph tensors (the ONNX importer maps TensorProto
/// element types onto these) and of the buffers a communicator moves (f32,
/// bf16 and f16 only: runtime/communicator.hpp). Values mirror no file
/// format.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace planner::core {

enum class DType : std::uint8_t {
  f32, f16, bf16, f64, f8,
  i8, i16, i32, i64, u8, u16, u32, u64,
  boolean, string, c64, c128,
};
inline constexpr std::size_t kDTypeCount = 17;

/// Bytes per element (strings count 8, a pointer's worth).
std::size_t dtype_size(DType t);
/// Canonical lowercase name: "f32", "bf16", "i64", "bool", ...
std::string_view dtype_name(DType t);
/// Parses dtype_name() output back; nullopt for any other text.
std::optional<DType> parse_dtype(std::string_view name);
/// True for f32, f16, bf16, f64, f8.
bool is_floating(DType t);

}  // namespace planner::core
