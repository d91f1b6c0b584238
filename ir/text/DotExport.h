//===- ir/text/DotExport.h - Graphviz view of a graph ----------------------------===//
#pragma once

#include "ir/Graph.h"

#include <ostream>

namespace onnxc {

/// Writes the graph as a Graphviz digraph: one box per node (op and key
/// attributes), inputs/constants/outputs as ellipses, edges labelled with
/// the value's type.
void exportDot(const Graph &graph, std::ostream &os);

} // namespace onnxc
