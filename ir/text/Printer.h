//===- ir/text/Printer.h - The textual form of the IR ----------------------------===//
//
// The grammar is documented in docs/IR.md; Parser.h reads it back, and
// print -> parse -> print gives identical text.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <ostream>
#include <string>

namespace onnxc {

struct PrintOptions {
  /// Constants with more elements than this print as `dense<elided>`.
  size_t maxInlineElements = 16;
  /// Print every constant in full (hex), whatever its size.
  bool printAllConstants = false;
  /// Append `loc("onnx node name")` to nodes that have a name.
  bool printNodeNames = false;
};

void printGraph(const Graph &graph, std::ostream &os, const PrintOptions &options = {});
std::string printGraphToString(const Graph &graph, const PrintOptions &options = {});
/// One node as it appears in a graph body (no trailing newline).
std::string printNode(const Node &node, const PrintOptions &options = {});

} // namespace onnxc
