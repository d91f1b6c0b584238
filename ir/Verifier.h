//===- ir/Verifier.h - Structural checks of a graph -------------------------===//
#pragma once

#include "ir/Graph.h"

namespace onnxc {

/// Checks the structural invariants of a graph and throws onnxc::Error naming
/// the first offending node or value: operand/result counts against the op
/// table, use lists consistent with operands, every operand defined before
/// its use in node order (no cycles), unique names, outputs bound, constants
/// whose type matches their data, and per-op attribute sanity.
void verifyGraph(const Graph &graph);

} // namespace onnxc
