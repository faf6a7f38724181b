// The ScheduleStep string form ("F3@c1") and message clean-up.

#include <charconv>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "internal.hpp"

namespace planner::plan::detail {

std::string step_text(const ScheduleStep& s) { return fmt::format("{}{}@c{}", s.kind, s.micro_batch, s.chunk); }

namespace {

// Digits only (no sign), within int range.
bool parse_count(std::string_view digits, int& out) {
  if (digits.empty() || digits.size() > 10) return false;
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return ec == std::errc() && ptr == digits.data() + digits.size();
}

}  // namespace

Result<ScheduleStep> parse_step(std::string_view text) {
  const auto bad = [&] {
    return make_error("expected a step like \"F3@c1\" (F or B, micro-batch, '@c', chunk), got \"{}\"", one_line(text));
  };
  if (text.size() < 4 || (text[0] != 'F' && text[0] != 'B')) return bad();
  const auto at = text.find("@c");
  if (at == std::string_view::npos) return bad();
  ScheduleStep s;
  s.kind = text[0];
  if (!parse_count(text.substr(1, at - 1), s.micro_batch) || !parse_count(text.substr(at + 2), s.chunk)) return bad();
  return s;
}

std::string one_line(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02x}", c);
    else out += ch;
  }
  return out;
}

}  // namespace planner::plan::detail
