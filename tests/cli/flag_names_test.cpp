// Config fields in library messages become the CLI's flags (flag_names.hpp).

#include <catch2/catch.hpp>

#include "planner/cli/flag_names.hpp"

using planner::cli::with_flags;

TEST_CASE("with_flags: backticked config fields become flags", "[cli][flags]") {
  CHECK(with_flags("`global_batch` 10 is not divisible by micro-batch * dp = 2 * 2 = 4") ==
        "--global-batch 10 is not divisible by micro-batch * dp = 2 * 2 = 4");
  CHECK(with_flags("`pp` 4 x `vp` 1 = 4 pipeline chunks") == "--pp 4 x --vp 1 = 4 pipeline chunks");
  CHECK(with_flags("`devices_per_node` must be at least 1 (got 0)") == "--gpus-per-node must be at least 1 (got 0)");
  CHECK(with_flags("`sequence_parallel` (sequence parallelism) needs `tp` of at least 2") ==
        "--sp (sequence parallelism) needs --tp of at least 2");
}

TEST_CASE("with_flags: other text is left as it is", "[cli][flags]") {
  // Products of degrees are not fields; unknown backticked words and an
  // unmatched backtick stay.
  CHECK(with_flags("dp*tp*pp*cp = 2*2*1*2 = 8") == "dp*tp*pp*cp = 2*2*1*2 = 8");
  CHECK(with_flags("configure with `cmake --preset cuda` first") == "configure with `cmake --preset cuda` first");
  CHECK(with_flags("a lone ` backtick and `tp`") == "a lone ` backtick and `tp`");
  CHECK(with_flags("") == "");
}
