//===- codegen/lower/controlflow/SubgraphLowering.h - A region lowered into its parent -===//
//
// If branches and Loop and Scan bodies (ir/Subgraph.h) are lowered the same
// way: in a LoweringContext of their own over the parent's module and plan,
// their inputs bound to buffers the parent chose, their steps appended to
// the parent's one step list (ControlFlowLowering.cpp, LoopLowering.cpp).
// What they share lives here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace onnxc::lower {

/// Appended to a refusal: where such a model still runs.
extern const char *const kReferenceFallback;

/// Bytes of `value` as a dim expression over the symbols.
Dim byteSize(const Value *value);

bool hasUnknownDim(const Shape &shape);

/// Gives `inner` (a context for a subgraph) the target options of `parent`.
void inheritTarget(LoweringContext &inner, const LoweringContext &parent);

/// The lowering driver's loop (Lowering.cpp) over one subgraph: every node
/// whose results are used, in order, by its registered lowering.
void lowerSubgraphNodes(LoweringContext &ctx, const Graph &graph);

/// The first value `graph` computes (and uses or returns) whose size the
/// runtime cannot evaluate, a dim unknown or over a symbol not in `bound`,
/// described as "'x' of shape [?, 4]"; nullopt when there is none.
std::optional<std::string> unsizableValue(const Graph &graph, const std::set<std::string> &bound);

/// The ops of `graph` (its own nodes) that have no lowering, as "Foo, Bar",
/// or nullopt.
std::optional<std::string> opsWithoutKernel(const std::vector<Node *> &order);

} // namespace onnxc::lower
