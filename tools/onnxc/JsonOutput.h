//===- tools/onnxc/JsonOutput.h - --json documents of the subcommands -------===//
//
// With --json a subcommand prints one JSON document on stdout instead of its
// text (llvm::json), so scripts and CI dashboards read it without scraping.
// Field names are snake_case and stable; docs/OUTPUTS.md lists them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/PassManager.h"
#include "tools/onnxc/CommandLine.h"

#include <llvm/Support/JSON.h>

namespace onnxc {

/// A JSON string of `text`, with invalid UTF-8 (names read from a model
/// file can hold any bytes) replaced rather than asserted on.
inline llvm::json::Value jsonText(const std::string &text) {
  return llvm::json::isUTF8(text) ? llvm::json::Value(text)
                                  : llvm::json::Value(llvm::json::fixUTF8(text));
}

/// The --json option (inspect, dump, bench).
OptionSpec jsonOption();

/// [{"pass": NAME, "counters": {NAME: N, ...}, "rejected": [{"reason": R,
/// "count": N}]}] for every pass that ran, in pipeline order.
llvm::json::Array passStatisticsJson(const PassManager &pm);
/// [{"pass": NAME, "message": TEXT}] for every explanation recorded.
llvm::json::Array passExplanationsJson(const PassManager &pm);
/// Adds "stats" / "explanations" to `document` when --stats / --explain ask.
void addPipelineReport(llvm::json::Object &document, const PassManager &pm, const ParsedArgs &args);

/// Prints `document` (pretty, two-space indent) and a newline on stdout.
void printJson(llvm::json::Value document);

} // namespace onnxc
