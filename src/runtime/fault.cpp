#include "planner/runtime/fault.hpp"

#include <charconv>
#include <string>

namespace planner::runtime {
namespace {

// Parses a whole decimal field, no sign, no spaces.
template <typename T>
bool parse_field(std::string_view s, T& out) {
  if (s.empty() || s.front() == '+' || s.front() == '-') return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Result<FaultSpec> parse_fault_spec(std::string_view text) {
  const std::string shown(text);
  const auto c1 = text.find(':');
  const auto c2 = c1 == std::string_view::npos ? c1 : text.find(':', c1 + 1);
  if (c2 == std::string_view::npos || text.find(':', c2 + 1) != std::string_view::npos)
    return make_error("--fault '{}': expected drop:RANK:N", shown);
  if (text.substr(0, c1) != "drop")
    return make_error("--fault '{}': unknown fault kind '{}' (only 'drop')", shown,
                      std::string(text.substr(0, c1)));
  FaultSpec f;
  if (!parse_field(text.substr(c1 + 1, c2 - c1 - 1), f.rank))
    return make_error("--fault '{}': RANK is not a non-negative integer", shown);
  if (!parse_field(text.substr(c2 + 1), f.nth) || f.nth == 0)
    return make_error("--fault '{}': N is not a positive integer (collectives count from 1)",
                      shown);
  return f;
}

}  // namespace planner::runtime
