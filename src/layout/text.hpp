#pragma once
// Internal: a tiny cursor over the text forms of meshes and layouts
// (docs/layout-grammar.md). Spaces between tokens are skipped; columns in
// error messages are 1-based.

#include <cctype>
#include <cstdint>
#include <optional>
#include <string_view>

namespace planner::layout::detail {

inline bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}
inline bool is_ident_char(char c) {
  return is_ident_start(c) || std::isdigit(static_cast<unsigned char>(c)) != 0;
}
/// True when `s` is a valid axis name.
inline bool is_identifier(std::string_view s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  for (char c : s)
    if (!is_ident_char(c)) return false;
  return true;
}

struct Cursor {
  std::string_view text;
  std::size_t pos = 0;

  void skip_ws() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])) != 0) ++pos;
  }
  /// Column (1-based) of the next token.
  std::size_t column() {
    skip_ws();
    return pos + 1;
  }
  bool at_end() {
    skip_ws();
    return pos >= text.size();
  }
  /// What the next token starts with, for messages.
  std::string_view peek_desc() {
    skip_ws();
    if (pos >= text.size()) return "end of text";
    return text.substr(pos, 1);
  }
  bool eat(char c) {
    skip_ws();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool eat_word(std::string_view w) {
    skip_ws();
    if (text.substr(pos, w.size()) != w) return false;
    std::size_t end = pos + w.size();
    if (end < text.size() && is_ident_char(text[end])) return false;
    pos = end;
    return true;
  }
  std::optional<std::string_view> ident() {
    skip_ws();
    if (pos >= text.size() || !is_ident_start(text[pos])) return std::nullopt;
    std::size_t start = pos;
    while (pos < text.size() && is_ident_char(text[pos])) ++pos;
    return text.substr(start, pos - start);
  }
  /// A non-negative decimal integer below 2^62.
  std::optional<std::int64_t> integer() {
    skip_ws();
    std::size_t start = pos;
    std::int64_t v = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) != 0) {
      if (v > (std::int64_t{1} << 58)) {
        pos = start;
        return std::nullopt;
      }
      v = v * 10 + (text[pos] - '0');
      ++pos;
    }
    if (pos == start) return std::nullopt;
    return v;
  }
};

}  // namespace planner::layout::detail
