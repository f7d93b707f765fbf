// Runs the fuzz target over every file given (files or directories) as a plain test, the way dav1d runs
// its fuzzers' corpora: a crash, sanitizer report or hang fails the test.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::filesystem::path> files;
    if (!std::filesystem::exists(argv[i])) {
      // ../shared's conformance files are an extra corpus that only the development tree has.
      std::printf("skipping %s: it is absent\n", argv[i]);
      continue;
    }
    if (std::filesystem::is_directory(argv[i])) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(argv[i])) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else {
      files.emplace_back(argv[i]);
    }
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      // Every prefix too: truncated files are the most common malformed input.
      for (size_t n = 0; n < bytes.size(); n += 1 + bytes.size() / 64) LLVMFuzzerTestOneInput(bytes.data(), n);
      ++runs;
    }
  }
  std::printf("ran %zu corpus files\n", runs);
  return runs ? 0 : 1;
}
