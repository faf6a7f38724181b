#pragma once
/// Subcommands come from one table (src/cli/main.cpp, ninja's kTools[]
/// idea): name, one-line summary, an example, and a setup function that adds
/// the subcommand's options to its CLI11 app and returns the runner to call
/// after parsing. A runner returns the process exit status: 0 success,
/// 1 a gate/threshold violated (planner check), 2 bad input or usage.
/// Runners print errors as one line "planner <cmd>: error: ..." on stderr.

#include <functional>
#include <span>
#include <string_view>

#include <CLI/CLI.hpp>

namespace planner::cli {

using Runner = std::function<int()>;
using SetupFn = Runner (*)(CLI::App& sub);

struct CommandSpec {
  std::string_view name;
  std::string_view summary;
  std::string_view example;
  SetupFn setup;
};

/// The command table.
std::span<const CommandSpec> commands();

/// Exit statuses.
inline constexpr int kExitOk = 0;
inline constexpr int kExitViolation = 1;
inline constexpr int kExitBadInput = 2;

/// Prints "planner <cmd>: error: <message>" on stderr and returns kExitBadInput.
int fail(std::string_view cmd, std::string_view message);

// One setup function per subcommand file (src/cli/<name>_cmd.cpp).
Runner setup_inspect(CLI::App& sub);
Runner setup_model(CLI::App& sub);
Runner setup_estimate(CLI::App& sub);
Runner setup_search(CLI::App& sub);
Runner setup_export(CLI::App& sub);
Runner setup_report(CLI::App& sub);
Runner setup_check(CLI::App& sub);
Runner setup_completion(CLI::App& sub);
Runner setup_calibrate(CLI::App& sub);
Runner setup_run(CLI::App& sub);
Runner setup_compare(CLI::App& sub);
Runner setup_validate(CLI::App& sub);

}  // namespace planner::cli
