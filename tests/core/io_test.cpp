#include <catch2/catch.hpp>

#include <filesystem>
#include <unistd.h>

#include "planner/core/io.hpp"

using namespace planner;
namespace fs = std::filesystem;

TEST_CASE("write_file refuses to replace without permission", "[core][io]") {
  auto dir = fs::temp_directory_path() / ("planner_io_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto p = dir / "out.txt";
  REQUIRE(io::write_file(p, "first", io::Overwrite::refuse).ok());
  auto again = io::write_file(p, "second", io::Overwrite::refuse);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().message.find("--force") != std::string::npos);
  CHECK(*io::read_file(p) == "first");
  REQUIRE(io::write_file(p, "second", io::Overwrite::replace).ok());
  CHECK(*io::read_file(p) == "second");
  // No temporary files left behind.
  int files = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir)) ++files;
  CHECK(files == 1);
  fs::remove_all(dir);
}

TEST_CASE("read_file names the missing path", "[core][io]") {
  auto r = io::read_file("/nonexistent/planner/file.onnx");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "/nonexistent/planner/file.onnx: no such file");
}

TEST_CASE("write_file into a missing folder fails cleanly", "[core][io]") {
  auto s = io::write_file("/nonexistent/planner/out.json", "x", io::Overwrite::replace);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("does not exist") != std::string::npos);
}
