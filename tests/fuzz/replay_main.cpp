// A plain driver for the libFuzzer targets in fuzz/ (docs/reliability.md):
// built with the project's own compiler in every build, it feeds each file
// named on the command line (directories: every regular file under them whose
// name ends in one of the --ext suffixes, or any file without --ext) to
// LLVMFuzzerTestOneInput once. --ext applies to the folders after it;
// --any clears the suffixes. The targets' oracles abort on a violated
// invariant, so a seed that breaks one fails the test; and a change that stops
// a target compiling fails `make test`, not only the clang fuzz build of CI.
//
//   fuzz_replay_<target> [--ext .onnx]... PATH... [--any PATH...]

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

bool wanted(const std::filesystem::path& p, const std::vector<std::string>& exts) {
  if (exts.empty()) return true;
  const std::string name = p.filename().string();
  return std::any_of(exts.begin(), exts.end(), [&](const std::string& e) {
    return name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> exts;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ext" && i + 1 < argc) {
      exts.emplace_back(argv[++i]);
      continue;
    }
    if (a == "--any") {
      exts.clear();
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(a, ec)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(a, ec))
        if (e.is_regular_file() && wanted(e.path(), exts)) files.push_back(e.path());
    } else if (std::filesystem::is_regular_file(a, ec)) {
      files.emplace_back(a);
    } else {
      std::fprintf(stderr, "fuzz_replay: %s: no such file or folder\n", a.c_str());
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "fuzz_replay: no input files\n");
    return 2;
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("fuzz_replay: %zu inputs, no invariant violated\n", files.size());
  return 0;
}
