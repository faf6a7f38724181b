// libFuzzer target: planner::plan::from_json on arbitrary text (the reader
// `planner estimate --plan` and the executors use).
//
// Oracle, beyond ASan + UBSan:
//   - a rejected plan reports one non-empty line starting with the source;
//   - an accepted plan validates, and its canonical text reads back to the
//     same plan and the same bytes (to_json is a fixed point), so a plan
//     written by the planner is a plan it reads.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "planner/plan/plan.hpp"

namespace {

/// PLANNER_FUZZ_ONE_LINE=0 turns the one-line-error check off (to look past
/// known multi-line messages for deeper bugs).
bool check_one_line() {
  static const bool on = [] {
    const char* v = std::getenv("PLANNER_FUZZ_ONE_LINE");
    return !(v && v[0] == '0');
  }();
  return on;
}

[[noreturn]] void violated(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz_plan: invariant violated: %s %.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::string_view kSource = "fuzz.json";
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = planner::plan::from_json(text, kSource);
  if (!r) {
    const std::string& m = r.error().message;
    if (check_one_line() && m.find('\n') != std::string::npos) violated("error message spans lines:", m);
    if (m.size() <= kSource.size() + 2 || m.compare(0, kSource.size(), kSource) != 0)
      violated("error message does not start with the source:", m);
    return 0;
  }
  if (auto st = planner::plan::validate(*r); !st) violated("accepted plan does not validate:", st.error().message);
  const std::string once = planner::plan::to_json(*r);
  auto back = planner::plan::from_json(once, kSource);
  if (!back) violated("canonical text does not read back:", back.error().message);
  if (!(*back == *r)) violated("canonical text reads back to a different plan");
  if (planner::plan::to_json(*back) != once) violated("to_json is not a fixed point");
  return 0;
}
