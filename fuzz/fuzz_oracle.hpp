#pragma once
// The oracle pieces every libFuzzer target shares (docs/reliability.md): how
// a violated invariant is reported, and what a rejected input's error must
// look like.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace fuzz_oracle {

/// PLANNER_FUZZ_ONE_LINE=0 turns the one-line-error check off (to look past
/// known multi-line messages for deeper bugs).
inline bool check_one_line() {
  static const bool on = [] {
    const char* v = std::getenv("PLANNER_FUZZ_ONE_LINE");
    return !(v && v[0] == '0');
  }();
  return on;
}

/// Prints "TARGET: invariant violated: WHAT DETAIL" and aborts (libFuzzer
/// records the input as a crash).
[[noreturn]] inline void violated(const char* target, const char* what, std::string_view detail) {
  std::fprintf(stderr, "%s: invariant violated: %s %.*s\n", target, what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

/// A rejected input's error: one line, starting with the name of the input
/// (`source`) and saying more than that.
inline void check_error(const char* target, const std::string& message, std::string_view source) {
  if (check_one_line() && message.find('\n') != std::string::npos)
    violated(target, "error message spans lines:", message);
  if (message.size() <= source.size() + 2 || message.compare(0, source.size(), source) != 0)
    violated(target, "error message does not start with the input's name:", message);
}

}  // namespace fuzz_oracle
