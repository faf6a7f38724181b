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

#include "fuzz_oracle.hpp"
#include "planner/plan/plan.hpp"

namespace {

[[noreturn]] void violated(const char* what, std::string_view detail = {}) {
  fuzz_oracle::violated("fuzz_plan", what, detail);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::string_view kSource = "fuzz.json";
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = planner::plan::from_json(text, kSource);
  if (!r) {
    const std::string& m = r.error().message;
    fuzz_oracle::check_error("fuzz_plan", m, kSource);
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
