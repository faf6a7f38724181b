#pragma once
/// Which mesh axis splits which letter of an op's einsum (ops/sharding.hpp):
/// the axis half of a Strategy, as a value.
///
/// Canonical text form (plan JSON `layout.strategies[].assignment`, logs,
/// hints): `axis:letter` items in mesh-axis order, joined by single spaces,
/// e.g. `dp:m tp:n`; the empty string for replicated (no axis assigned).
/// parse_assignment accepts exactly that form, so
/// parse_assignment(to_string(a)) == a and to_string(*parse_assignment(t)) == t.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/core/result.hpp"

namespace planner::ops {

struct Assignment {
  /// One mesh axis (by name) and the letter it splits.
  struct Item {
    std::string axis;
    std::string letter;
    friend bool operator==(const Item&, const Item&) = default;
  };
  /// In mesh-axis order; at most one item per axis.
  std::vector<Item> items;

  /// No axis assigned: every device runs the whole op.
  static Assignment replicated() { return {}; }
  bool is_replicated() const { return items.empty(); }
  /// True when mesh axis `axis` splits some letter.
  bool uses_axis(std::string_view axis) const;
  /// The letter `axis` splits; nullopt when it splits none.
  std::optional<std::string_view> letter_of(std::string_view axis) const;

  friend bool operator==(const Assignment&, const Assignment&) = default;
};

/// The canonical text form (header note): "dp:m tp:n"; "" when replicated.
std::string to_string(const Assignment& a);

/// Parses the canonical text form. Errors name the text and the item at
/// fault: an item without ':' or with an empty axis or letter, a second ':',
/// an empty item (leading, trailing or doubled space), an axis named twice.
Result<Assignment> parse_assignment(std::string_view text);

}  // namespace planner::ops
