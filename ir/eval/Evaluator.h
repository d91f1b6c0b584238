//===- ir/eval/Evaluator.h - The reference evaluator ------------------------===//
//
// Plain, correct C++ for every IR op, executing a graph op by op. It is the
// oracle of every test, the engine of constant folding and the fallback
// backend. Correctness and clarity over speed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace onnxc {

/// Runs one node on concrete operands (null for absent optional operands).
/// Returns one tensor per result. Throws onnxc::Error naming the node on bad
/// operands (mismatched shapes, out-of-range indices, ...).
std::vector<Tensor> evaluateNode(const Node &node, const std::vector<const Tensor *> &operands);

/// Whether the evaluator implements this op.
bool hasReferenceKernel(OpKind kind);

/// Runs the whole graph. `inputs` maps graph input names to tensors; every
/// input must be given, with the declared dtype, rank and constant dims, and
/// symbolic dims bound consistently across inputs (else onnxc::Error naming
/// the input). Returns the outputs in graph output order.
std::vector<Tensor> evaluateGraph(const Graph &graph, const std::map<std::string, Tensor> &inputs);

} // namespace onnxc
