//===- tests/fuzz/FuzzSupport.cpp - What the fuzz harnesses share -----------===//
#include "FuzzSupport.h"

#include "ir/Error.h"
#include "ir/MemoryBudget.h"
#include "ir/text/Parser.h"
#include "ir/text/Printer.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <vector>

namespace fs = std::filesystem;

namespace onnxc::fuzz {

void finding(const std::string &what, const std::string &details) {
  std::cerr << "fuzz finding: " << what << "\n";
  if (!details.empty())
    std::cerr << details << (details.back() == '\n' ? "" : "\n");
  std::cerr.flush();
  std::abort();
}

void limitMemory() {
  // The runtime reads the variable once, at its first session.
  setenv("ONNXC_MEMORY_LIMIT", "1G", 1);
  setMemoryLimit(int64_t(1) << 30);
}

bool verbose() {
  static const bool on = [] {
    const char *value = std::getenv("ONNXC_FUZZ_VERBOSE");
    return value && *value && std::string(value) != "0";
  }();
  return on;
}

bool replaying() {
  static const bool on = std::getenv("ONNXC_FUZZ_REPLAY") != nullptr;
  return on;
}

void note(const std::string &what) {
  if (verbose())
    std::cerr << "note: " << what << "\n";
}

namespace {

void expectRoundTripWith(const Graph &graph, const PrintOptions &options, const char *stage,
                         const char *how) {
  std::string first = printGraphToString(graph, options);
  std::unique_ptr<Graph> reparsed;
  try {
    reparsed = parseGraph(first, "<printed>");
  } catch (const Error &e) {
    finding(std::string("the printed ") + stage + " (" + how + ") does not parse: " + e.what(),
            first);
  }
  std::string second = printGraphToString(*reparsed, options);
  if (second != first)
    finding(std::string("print -> parse -> print of the ") + stage + " (" + how +
                ") changed the text",
            "--- first print\n" + first + "--- second print\n" + second);
}

std::vector<std::string> &tempDirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

void removeTempDirs() {
  std::error_code ec;
  for (const std::string &dir : tempDirs())
    fs::remove_all(dir, ec);
}

} // namespace

void expectPrintRoundTrip(const Graph &graph, const char *stage) {
  PrintOptions everything;
  everything.printAllConstants = true;
  everything.printNodeNames = true;
  expectRoundTripWith(graph, everything, stage, "all constants, node names");
  expectRoundTripWith(graph, PrintOptions(), stage, "default options");
}

std::string makeTempDir(const std::string &prefix) {
  const char *base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/" + prefix + "XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data())) {
    std::perror("fuzz: mkdtemp");
    std::exit(2);
  }
  // The list exists before the handler is registered, so it is destroyed
  // after the handler ran.
  static std::once_flag once;
  std::call_once(once, [] {
    tempDirs();
    std::atexit(removeTempDirs);
  });
  tempDirs().push_back(buffer.data());
  return buffer.data();
}

void writeFile(const std::string &path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out) {
    std::cerr << "fuzz: cannot write " << path << "\n";
    std::exit(2);
  }
}

std::string ByteReader::line(size_t maxLength) {
  std::string out;
  while (pos_ < size_ && out.size() < maxLength) {
    char c = char(data_[pos_++]);
    if (c == '\n')
      break;
    out += c;
  }
  return out;
}

} // namespace onnxc::fuzz
