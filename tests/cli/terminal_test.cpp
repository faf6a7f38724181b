// The progress line: silent for short work and when disabled; drawn in place
// and erased for long work. Verbosity read from the top-level flags.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "planner/cli/terminal.hpp"

using namespace planner::cli;
using namespace std::chrono_literals;

namespace {

/// Everything written to `f` so far.
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  return s;
}

}  // namespace

TEST_CASE("a progress line is silent for work shorter than its delay") {
  std::FILE* f = std::tmpfile();
  {
    ProgressLine p(true, 10s, f);
    p.set("searching: 1/2 layouts");
    p.finish();
    CHECK_FALSE(p.drawn());
  }
  CHECK(contents(f).empty());
  std::fclose(f);
}

TEST_CASE("a disabled progress line never draws") {
  std::FILE* f = std::tmpfile();
  {
    ProgressLine p(false, 0ms, f);
    p.set("searching");
    std::this_thread::sleep_for(100ms);
  }
  CHECK(contents(f).empty());
  std::fclose(f);
}

TEST_CASE("long work draws the latest text in place, then erases it") {
  std::FILE* f = std::tmpfile();
  {
    ProgressLine p(true, 20ms, f);
    p.set("importing m.onnx");
    std::this_thread::sleep_for(600ms);  // the delay, then a draw at the next tick
    CHECK(p.drawn());
    p.set("searching: 16/32 layouts");
    std::this_thread::sleep_for(600ms);
  }
  // Each draw: carriage return, text, erase to end of line; the end erases the line.
  CHECK(contents(f) == "\rimporting m.onnx\033[K\rsearching: 16/32 layouts\033[K\r\033[K");
  std::fclose(f);
}

TEST_CASE("verbosity comes from the top-level flags, before or after the subcommand") {
  auto parse = [](std::vector<std::string> args) {
    CLI::App app;
    add_verbosity_flags(app);
    app.fallthrough();
    auto* sub = app.add_subcommand("search");
    std::reverse(args.begin(), args.end());
    app.parse(args);
    return verbosity_of(*sub);
  };
  CHECK(parse({"search"}) == Verbosity::normal);
  CHECK(parse({"-q", "search"}) == Verbosity::quiet);
  CHECK(parse({"search", "--quiet"}) == Verbosity::quiet);
  CHECK(parse({"search", "-v"}) == Verbosity::verbose);
  CHECK_THROWS_AS(parse({"-q", "-v", "search"}), CLI::ExcludesError);
  CLI::App bare;
  CHECK(verbosity_of(bare) == Verbosity::normal);
}
