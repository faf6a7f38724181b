// Sharding hints: parsing (header: estimate/hints.hpp; globs from core).

#include "planner/estimate/hints.hpp"

#include <fmt/format.h>

namespace planner::estimate {

Result<std::vector<Hint>> parse_hints(std::string_view text, std::string_view source) {
  std::vector<Hint> out;
  int line = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t nl = std::min(text.find('\n', pos), text.size());
    std::string_view l = text.substr(pos, nl - pos);
    ++line;
    pos = nl + 1;
    if (const auto hash = l.find('#'); hash != std::string_view::npos) l = l.substr(0, hash);
    auto trim = [](std::string_view v) {
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t' || v.front() == '\r')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
      return v;
    };
    l = trim(l);
    if (l.empty()) {
      if (nl >= text.size()) break;
      continue;
    }
    const std::size_t sp = l.find_first_of(" \t");
    if (sp == std::string_view::npos)
      return make_error("{}:{}: '{}' has no strategy (expected: OP_PATTERN STRATEGY)", source, line, l);
    Hint h;
    h.pattern = std::string(l.substr(0, sp));
    h.strategy = std::string(trim(l.substr(sp)));
    h.line = line;
    if (h.strategy.find_first_of(" \t") != std::string::npos)
      return make_error("{}:{}: strategy '{}' contains spaces (write shard() notation without spaces)", source, line,
                        h.strategy);
    out.push_back(std::move(h));
    if (nl >= text.size()) break;
  }
  return out;
}

}  // namespace planner::estimate
