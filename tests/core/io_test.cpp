#include <catch2/catch.hpp>

#include <filesystem>
#include <sys/stat.h>
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

namespace {
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / ("planner_io_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  int count() const {
    int n = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(path)) ++n;
    return n;
  }
};
}  // namespace

TEST_CASE("write_file with --force replaces files only", "[core][io]") {
  TempDir d("nonregular");
  // A folder in the target's place: left alone, no temp file left.
  fs::create_directory(d.path / "plan.json");
  auto s = io::write_file(d.path / "plan.json", "x", io::Overwrite::replace);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("not a regular file") != std::string::npos);
  CHECK(fs::is_directory(d.path / "plan.json"));
  // A FIFO (like /dev/null, not a file): refused without opening it (opening
  // a FIFO with no reader would block this test).
  REQUIRE(::mkfifo((d.path / "fifo").c_str(), 0600) == 0);
  s = io::write_file(d.path / "fifo", "x", io::Overwrite::replace);
  REQUIRE_FALSE(s.ok());
  CHECK(fs::is_fifo(d.path / "fifo"));
  CHECK(d.count() == 2);
}

TEST_CASE("write_file never touches a file named like its temporary", "[core][io]") {
  TempDir d("tmpname");
  const auto target = d.path / "out.txt";
  auto squatter = target;
  squatter += ".tmp." + std::to_string(::getpid()) + ".0";
  REQUIRE(io::write_file(squatter, "someone else's", io::Overwrite::refuse).ok());
  REQUIRE(io::write_file(target, "mine", io::Overwrite::refuse).ok());
  CHECK(*io::read_file(squatter) == "someone else's");
  CHECK(*io::read_file(target) == "mine");
  CHECK(d.count() == 2);  // the target and the squatter: our temporary is gone
}

TEST_CASE("write_file refuses a dangling symlink without --force", "[core][io]") {
  TempDir d("symlink");
  fs::create_symlink(d.path / "elsewhere.txt", d.path / "out.txt");
  auto s = io::write_file(d.path / "out.txt", "x", io::Overwrite::refuse);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message.find("--force") != std::string::npos);
  CHECK_FALSE(fs::exists(d.path / "elsewhere.txt"));  // nothing written through the link
  CHECK(d.count() == 1);
}
