// Axis-to-letter assignments of op strategies (header: ops/assignment.hpp).

#include "planner/ops/assignment.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace planner::ops {

bool Assignment::uses_axis(std::string_view axis) const { return letter_of(axis).has_value(); }

std::optional<std::string_view> Assignment::letter_of(std::string_view axis) const {
  for (const auto& it : items)
    if (it.axis == axis) return std::string_view(it.letter);
  return std::nullopt;
}

std::string to_string(const Assignment& a) {
  std::string out;
  for (const auto& it : a.items) {
    if (!out.empty()) out += ' ';
    out += it.axis;
    out += ':';
    out += it.letter;
  }
  return out;
}

Result<Assignment> parse_assignment(std::string_view text) {
  Assignment a;
  if (text.empty()) return a;
  std::size_t start = 0;
  while (true) {
    const auto end = std::min(text.find(' ', start), text.size());
    const auto item = text.substr(start, end - start);
    if (item.empty()) return make_error("assignment '{}': empty item (items are separated by one space)", text);
    const auto colon = item.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == item.size() ||
        item.find(':', colon + 1) != std::string_view::npos)
      return make_error("assignment '{}': item '{}' is not axis:letter", text, item);
    Assignment::Item it{std::string(item.substr(0, colon)), std::string(item.substr(colon + 1))};
    if (a.uses_axis(it.axis)) return make_error("assignment '{}': axis '{}' assigned twice", text, it.axis);
    a.items.push_back(std::move(it));
    if (end == text.size()) break;
    start = end + 1;
  }
  return a;
}

}  // namespace planner::ops
