//===- tests/fuzz/FuzzDriver.cpp - Run a harness over files, without libFuzzer ===//
//
// The normal (g++) build links each harness with this main instead of
// libFuzzer's, so ctest can replay the seed corpus and the committed
// regression inputs through the same LLVMFuzzerTestOneInput the fuzzer
// runs. Arguments are files or folders (read recursively, in name order);
// arguments starting with '-' are libFuzzer flags and are ignored, so a
// libFuzzer command line replays here too.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

namespace {

bool collectInputs(const std::string &argument, std::vector<fs::path> &inputs) {
  std::error_code ec;
  if (fs::is_regular_file(argument, ec)) {
    inputs.push_back(argument);
    return true;
  }
  if (!fs::is_directory(argument, ec)) {
    std::cerr << "fuzz driver: no such file or folder: " << argument << "\n";
    return false;
  }
  std::vector<fs::path> found;
  for (const fs::directory_entry &entry : fs::recursive_directory_iterator(argument, ec))
    if (entry.is_regular_file() && entry.path().filename().string()[0] != '.')
      found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  inputs.insert(inputs.end(), found.begin(), found.end());
  return !ec;
}

} // namespace

int main(int argc, char **argv) {
  // Harnesses are stricter with committed inputs (fuzz::replaying()).
  setenv("ONNXC_FUZZ_REPLAY", "1", 1);
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> inputs;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    if (argument == "-v")
      verbose = true;
    else if (argument.empty() || argument[0] != '-')
      if (!collectInputs(argument, inputs))
        return 2;
  }
  if (inputs.empty()) {
    std::cerr << "fuzz driver: no inputs (usage: " << argv[0] << " [-v] FILE|FOLDER...)\n";
    return 2;
  }
  for (const fs::path &path : inputs) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.eof() && in.fail()) {
      std::cerr << "fuzz driver: cannot read " << path.string() << "\n";
      return 2;
    }
    // Named before running, so the input a crash belongs to is on record.
    if (verbose)
      std::cerr << "running " << path.string() << " (" << bytes.size() << " bytes)\n";
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  }
  std::cout << "ran " << inputs.size() << " inputs\n";
  return 0;
}
