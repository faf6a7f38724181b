// Element types (header: core/dtype.hpp).

#include "planner/core/dtype.hpp"

namespace planner::core {
namespace {
struct Row { DType t; std::string_view name; std::size_t size; };
constexpr std::array<Row, kDTypeCount> kRows{{
    {DType::f32, "f32", 4}, {DType::f16, "f16", 2}, {DType::bf16, "bf16", 2},
    {DType::f64, "f64", 8}, {DType::f8, "f8", 1}, {DType::i8, "i8", 1},
    {DType::i16, "i16", 2}, {DType::i32, "i32", 4}, {DType::i64, "i64", 8},
    {DType::u8, "u8", 1}, {DType::u16, "u16", 2}, {DType::u32, "u32", 4},
    {DType::u64, "u64", 8}, {DType::boolean, "bool", 1}, {DType::string, "string", 8},
    {DType::c64, "c64", 8}, {DType::c128, "c128", 16},
}};
const Row& row(DType t) {
  for (const auto& r : kRows)
    if (r.t == t) return r;
  return kRows[0];
}
}  // namespace

std::size_t dtype_size(DType t) { return row(t).size; }
std::string_view dtype_name(DType t) { return row(t).name; }
std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& r : kRows)
    if (r.name == name) return r.t;
  return std::nullopt;
}
bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64 || t == DType::f8;
}

}  // namespace planner::core
