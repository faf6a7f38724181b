#pragma once
/// Terminal manners shared by every subcommand: the top-level --quiet/-q and
/// --verbose/-v flags, and a progress line on stderr for work that takes
/// longer than a second, shown only when stderr is a terminal.
///
/// Design note. No globals: the verbosity lives in the parsed CLI11 tree
/// (read from a subcommand through its parent app), and a ProgressLine is an
/// object the command owns for the duration of its work. Work reports what
/// it is doing through `set`; a background thread draws the line once a
/// second has passed and at most five times a second after that, and the
/// destructor erases it, so short runs and redirected stderr print nothing.

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

namespace planner::cli {

enum class Verbosity { quiet, normal, verbose };

/// Adds --quiet/-q and --verbose/-v (mutually exclusive) to the top-level app.
void add_verbosity_flags(CLI::App& app);

/// The verbosity `sub` runs at: the top-level flags of the app it belongs to
/// (normal when the app has none, as in unit tests).
Verbosity verbosity_of(const CLI::App& sub);

/// Whether `f` is a terminal.
bool is_terminal(std::FILE* f);

/// A one-line status on stderr for long work (see the design note).
class ProgressLine {
 public:
  /// `enabled`: draw at all (callers pass stderr-is-a-terminal and not quiet);
  /// `delay`: silence before the first draw; `out`: where to draw.
  explicit ProgressLine(bool enabled, std::chrono::milliseconds delay = std::chrono::seconds(1),
                        std::FILE* out = stderr);
  /// Erases the line if it was drawn.
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  /// Sets the text (thread-safe); drawn on the next tick once the delay passed.
  void set(std::string text);
  /// Erases the line now and stops drawing (before printing results).
  void finish();
  /// Whether the line was ever drawn.
  bool drawn() const;

 private:
  void loop(std::stop_token stop);

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::string text_;
  bool dirty_ = false, drawn_ = false, finished_ = false;
  std::chrono::milliseconds delay_;
  std::FILE* out_;
  std::jthread worker_;
};

/// Under --verbose: prints "planner <sub>: <what> in <t> s" on stderr, timed
/// from `since`; nothing otherwise.
void log_step(const CLI::App& sub, std::string_view what, std::chrono::steady_clock::time_point since);

/// The progress line a subcommand shows: on when stderr is a terminal and
/// the verbosity is not quiet (and `also` holds, e.g. not --json).
bool progress_wanted(const CLI::App& sub, bool also = true);

}  // namespace planner::cli
