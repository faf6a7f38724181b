// Terminal manners: verbosity flags and the delayed progress line.

#include "planner/cli/terminal.hpp"

#include <unistd.h>

#include <fmt/core.h>

namespace planner::cli {

void add_verbosity_flags(CLI::App& app) {
  auto* q = app.add_flag("-q,--quiet")->description("Print only results and errors: no progress line, no notes");
  auto* v = app.add_flag("-v,--verbose")->description("Also print what each step did and how long it took (stderr)");
  q->excludes(v);
}

Verbosity verbosity_of(const CLI::App& sub) {
  const CLI::App* root = &sub;
  while (root->get_parent() != nullptr) root = root->get_parent();
  const auto* q = root->get_option_no_throw("--quiet");
  const auto* v = root->get_option_no_throw("--verbose");
  if (q != nullptr && q->count() > 0) return Verbosity::quiet;
  if (v != nullptr && v->count() > 0) return Verbosity::verbose;
  return Verbosity::normal;
}

bool is_terminal(std::FILE* f) { return isatty(fileno(f)) != 0; }

bool progress_wanted(const CLI::App& sub, bool also) {
  return also && verbosity_of(sub) != Verbosity::quiet && is_terminal(stderr);
}

void log_step(const CLI::App& sub, std::string_view what, std::chrono::steady_clock::time_point since) {
  if (verbosity_of(sub) != Verbosity::verbose) return;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  fmt::print(stderr, "planner {}: {} in {:.3f} s\n", sub.get_name(), what, s);
}

ProgressLine::ProgressLine(bool enabled, std::chrono::milliseconds delay, std::FILE* out) : delay_(delay), out_(out) {
  if (enabled) worker_ = std::jthread([this](std::stop_token st) { loop(st); });
}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::set(std::string text) {
  std::lock_guard lock(mu_);
  text_ = std::move(text);
  dirty_ = true;
}

bool ProgressLine::drawn() const {
  std::lock_guard lock(mu_);
  return drawn_;
}

void ProgressLine::finish() {
  if (worker_.joinable()) {
    worker_.request_stop();
    cv_.notify_all();
    worker_.join();
  }
  std::lock_guard lock(mu_);
  if (drawn_ && !finished_) {
    fmt::print(out_, "\r\033[K");
    std::fflush(out_);
  }
  finished_ = true;
}

void ProgressLine::loop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  // Nothing for the first `delay_`: short work stays silent.
  if (cv_.wait_for(lock, stop, delay_, [] { return false; }); stop.stop_requested()) return;
  while (!stop.stop_requested()) {
    if (dirty_ && !text_.empty()) {
      fmt::print(out_, "\r{}\033[K", text_);
      std::fflush(out_);
      drawn_ = true;
      dirty_ = false;
    }
    cv_.wait_for(lock, stop, std::chrono::milliseconds(200), [] { return false; });
  }
}

}  // namespace planner::cli
