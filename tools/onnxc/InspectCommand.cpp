//===- tools/onnxc/InspectCommand.cpp - onnxc inspect -----------------------===//
#include "tools/onnxc/Commands.h"

#include "frontend/OnnxImporter.h"
#include "ir/Error.h"
#include "tools/onnxc/JsonOutput.h"

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

/// "name: f32[batch, seq]" as {"name": ..., "type": ...}.
llvm::json::Array valueListJson(const std::vector<std::string> &items) {
  llvm::json::Array list;
  for (const std::string &item : items) {
    size_t colon = item.rfind(": ");
    list.push_back(llvm::json::Object{
        {"name", jsonText(colon == std::string::npos ? item : item.substr(0, colon))},
        {"type", jsonText(colon == std::string::npos ? "" : item.substr(colon + 2))}});
  }
  return list;
}

/// Counts past 2^63 (a hostile model's claimed parameters) as text; JSON
/// numbers that large lose digits anyway.
llvm::json::Value countJson(unsigned __int128 count) {
  if (count <= (unsigned __int128)INT64_MAX)
    return int64_t(count);
  return formatCount(count);
}

void printInspectJson(const std::string &path, const ModelSummary &summary) {
  llvm::json::Array opsets, ops, unsupported;
  for (const auto &[domain, version] : summary.opsets)
    opsets.push_back(llvm::json::Object{{"domain", jsonText(domain.empty() ? "ai.onnx" : domain)},
                                        {"version", version}});
  int64_t nodes = 0;
  for (const auto &[op, count] : summary.opHistogram) {
    ops.push_back(llvm::json::Object{{"op", jsonText(op)}, {"count", count}});
    nodes += count;
  }
  for (const std::string &op : summary.unsupportedOps)
    unsupported.push_back(jsonText(op));
  printJson(llvm::json::Object{{"model", jsonText(path)},
                               {"producer", jsonText(summary.producer)},
                               {"ir_version", summary.irVersion},
                               {"opsets", std::move(opsets)},
                               {"inputs", valueListJson(summary.inputs)},
                               {"outputs", valueListJson(summary.outputs)},
                               {"nodes", nodes},
                               {"ops", std::move(ops)},
                               {"parameters", countJson(summary.numParameters)},
                               {"parameter_bytes", countJson(summary.parameterBytes)},
                               {"unsupported_ops", std::move(unsupported)}});
}

int runInspect(const ParsedArgs &args) {
  std::string path = modelArgument(args, "inspect");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail(path, ": is a directory, not a model file");
  if (!std::filesystem::is_regular_file(path, ec))
    fail(path, ": no such file");
  if (isModelLibraryPath(path))
    return inspectLibrary(path, args.has("json"));
  if (std::filesystem::path(path).extension() != ".onnx")
    fail(path, ": inspect reads .onnx models and compiled .so files (use 'onnxc dump' for .ir ",
         "files)");
  ModelSummary summary = summarizeOnnxFile(path);
  if (args.has("json")) {
    printInspectJson(path, summary);
    return 0;
  }

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
  std::vector<std::pair<std::string, int64_t>> ops(summary.opHistogram.begin(),
                                                   summary.opHistogram.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
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
  return {"inspect",
          "show a model's inputs, outputs, opsets, ops, parameters and unsupported ops, or what a "
          "compiled model.so holds",
          "inspect MODEL.onnx|MODEL.so [--json]",
          {jsonOption()},
          runInspect};
}

} // namespace onnxc
