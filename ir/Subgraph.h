//===- ir/Subgraph.h - The interface of nodes that own subgraphs ------------===//
//
// If, Loop and Scan own their subgraphs (Node::subgraphs). A subgraph is a
// Graph of its own, isolated from above as an MLIR region with explicit
// captures: every outer value it reads is a trailing operand of the node
// and, at the same position, a trailing input of the subgraph. So the outer
// graph's use lists see every use (DCE keeps a value read only inside a
// branch), a pass walking the outer node list never meets a node of a
// subgraph, and erasing the node frees its subgraphs with it.
//
//   If(cond, c1..cK)                      then/else(c1..cK) -> (r1..rR)
//   Loop(M, cond, v1..vN, c1..cK)         body(i, cond, v1..vN, c1..cK)
//                                              -> (cond, v1..vN, s1..sS)
//   Scan(v1..vN, x1..xM, c1..cK)          body(v1..vN, x1..xM, c1..cK)
//                                              -> (v1..vN, s1..sS)
//
// Operand i and subgraph input i always correspond (Loop's absent M or cond
// still has its body input). Loop and Scan record K in the `captures`
// attribute; for If every operand after the condition is a capture.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <memory>
#include <string>
#include <vector>

namespace onnxc {

/// If, Loop or Scan.
bool isControlFlow(OpKind kind);

/// The subgraph attribute names of a control-flow op, in printing order.
std::vector<std::string> subgraphNames(OpKind kind);

/// The number of trailing operands that are captured outer values.
size_t numCaptures(const Node &node);
/// Loop: the number of loop-carried values N.
size_t loopCarriedCount(const Node &node);
/// Scan: the number of scan inputs M (the num_scan_inputs attribute).
size_t scanInputCount(const Node &node);
/// Scan: the number of state variables N.
size_t scanStateCount(const Node &node);

/// Checks a node's subgraphs against its operands and results (counts, the
/// captures attribute, dtypes of corresponding inputs) and verifies each
/// subgraph; throws onnxc::Error naming the node and the region. Nodes of
/// other ops must own no subgraph.
void verifySubgraphs(const Node &node);

/// Copies the nodes of `body` into `outer` just before `position`, binding
/// body input i to `inputs[i]`; body constants become outer constants
/// (sharing their data). The nodes' own subgraphs are moved, not copied, so
/// `body` is consumed: only destroy it afterwards. Returns the values the
/// body's outputs became, in order.
std::vector<Value *> inlineSubgraph(Graph &outer, Node *position, Graph &body,
                                    const std::vector<Value *> &inputs);

} // namespace onnxc
