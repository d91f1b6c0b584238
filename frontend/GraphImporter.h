//===- frontend/GraphImporter.h - onnx::GraphProto -> Graph -----------------===//
#pragma once

#include "frontend/ModelFolder.h"
#include "frontend/ModelLoader.h"
#include "ir/Graph.h"

#include <onnx/onnx_pb.h>

#include <memory>
#include <string>
#include <vector>

namespace onnxc {

/// Imports a main graph: initializers and Constant nodes become constants,
/// the other inputs typed inputs, every node goes through its registered
/// importer in a topological order. Throws onnxc::Error (without the file
/// prefix) on undefined or duplicate names, cycles, bad tensors, and, in
/// one error listing them all, unsupported ops. Shapes are not inferred.
std::unique_ptr<Graph> importGraph(const onnx::GraphProto &proto, const OpsetMap &opsets,
                                   const ModelFolder &modelDir);

class ImportContext;

/// Imports the subgraph of an If, Loop or Scan node inside the graph that
/// `outer` is importing: its formal inputs first, then one input per outer
/// value it reads (ONNX lexical scoping), whose outer values are returned in
/// `captures` in the same order (ir/Subgraph.h).
std::unique_ptr<Graph> importSubgraph(const onnx::GraphProto &proto, ImportContext &outer,
                                      std::vector<Value *> &captures);

/// Imports a GRAPH attribute's nodes into the graph `context` is building, in
/// place of the node that owns it (a FlexAttention's score_mod): its formal
/// inputs bound to `inputs` (as many), its initializers as constants, and
/// every name it defines given a fresh name that starts with `prefix`, so that
/// two inlined copies of one attribute, or of two attributes that share names,
/// never meet. Names it reads from enclosing graphs resolve in `context`.
/// Returns the values of its outputs, in order.
std::vector<Value *> inlineSubgraph(const onnx::GraphProto &proto, ImportContext &context,
                                    const std::vector<Value *> &inputs, const std::string &prefix);

/// The ops of the graph and its subgraphs without an importer at the
/// model's opsets, one entry
/// per op type in order of first appearance: "Foo (node 'a')",
/// "Bar (nodes 'b', 'c')". Ops of other domains are named "domain.Op".
std::vector<std::string> findUnsupportedOps(const onnx::GraphProto &proto, const OpsetMap &opsets);

/// Checks the names of a graph (every input defined, none defined twice) and
/// that it has no cycle; returns its nodes' indices in a topological order
/// (file order where that is valid). Throws onnxc::Error naming the node.
std::vector<int> checkGraphStructure(const onnx::GraphProto &proto);

/// Throws "unsupported ops: ..." listing every entry, if there are any.
void failOnUnsupportedOps(const std::vector<std::string> &unsupported);

} // namespace onnxc
