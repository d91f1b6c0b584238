//===- tools/onnxc/InspectCommand.cpp - onnxc inspect -----------------------===//
#include "tools/onnxc/Commands.h"

#include "frontend/OnnxImporter.h"
#include "ir/Error.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace onnxc {

namespace {

std::string humanBytes(unsigned __int128 bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 8) {
    value /= 1024;
    ++unit;
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, unit ? "%.1f %s" : "%.0f %s", value, units[unit]);
  return buffer;
}

/// Decimal digits of a count no standard stream prints.
std::string formatCount(unsigned __int128 count) {
  std::string digits;
  do {
    digits.insert(digits.begin(), char('0' + int(count % 10)));
    count /= 10;
  } while (count);
  return digits;
}

void printList(const char *title, const std::vector<std::string> &items) {
  std::cout << title << ":" << (items.empty() ? " none" : "") << "\n";
  for (const std::string &item : items)
    std::cout << "  " << item << "\n";
}

int runInspect(const ParsedArgs &args) {
  std::string path = modelArgument(args, "inspect");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail(path, ": is a directory, not a model file");
  if (!std::filesystem::is_regular_file(path, ec))
    fail(path, ": no such file");
  if (std::filesystem::path(path).extension() != ".onnx")
    fail(path, ": inspect reads .onnx models (use 'onnxc dump' for .ir files)");
  ModelSummary summary = summarizeOnnxFile(path);

  std::cout << "model: " << path << "\n";
  std::cout << "producer: " << (summary.producer.empty() ? "(unknown)" : summary.producer) << "\n";
  std::cout << "ir version: " << summary.irVersion << "\n";
  std::cout << "opsets:";
  bool first = true;
  for (const auto &[domain, version] : summary.opsets) {
    std::cout << (first ? " " : ", ") << (domain.empty() ? "ai.onnx" : domain) << " " << version;
    first = false;
  }
  std::cout << "\n";
  printList("inputs", summary.inputs);
  printList("outputs", summary.outputs);

  // Most frequent ops first: that is what a reader scans for.
  std::vector<std::pair<std::string, int64_t>> ops(summary.opHistogram.begin(), summary.opHistogram.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
  int64_t nodes = 0;
  size_t width = 0;
  for (const auto &[op, count] : ops) {
    nodes += count;
    width = std::max(width, op.size());
  }
  std::cout << "ops: " << nodes << " nodes, " << ops.size() << " kinds\n";
  for (const auto &[op, count] : ops)
    std::cout << "  " << op << std::string(width - op.size() + 2, ' ') << count << "\n";
  std::cout << "parameters: " << formatCount(summary.numParameters) << " ("
            << humanBytes(summary.parameterBytes) << ")\n";
  printList("unsupported ops", summary.unsupportedOps);
  return 0;
}

} // namespace

Command inspectCommand() {
  return {"inspect", "show a model's inputs, outputs, opsets, ops, parameters and unsupported ops",
          "inspect MODEL.onnx", {}, runInspect};
}

} // namespace onnxc
