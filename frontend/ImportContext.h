//===- frontend/ImportContext.h - State shared by the op importers ----------===//
//
// The graph importer owns an ImportContext for the whole model and hands
// each op importer an OnnxNode: a view of one NodeProto that resolves its
// inputs to IR values, converts its attributes, and creates the IR node
// (or constant) that defines its outputs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/ModelFolder.h"
#include "frontend/ModelLoader.h"
#include "ir/Graph.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace onnxc {

class ImportContext {
public:
  /// `onnxNames` holds every value name the ONNX graph uses, so names the
  /// importer invents never collide with a name a later node defines.
  /// `parent` is the context of the enclosing graph when `graph` is a
  /// subgraph (an If branch, a Loop or Scan body), else null.
  ImportContext(Graph &graph, ModelFolder modelDir, OpsetMap opsets,
                std::unordered_set<std::string> onnxNames, ImportContext *parent = nullptr)
      : graph_(graph), modelDir_(std::move(modelDir)), opsets_(std::move(opsets)),
        onnxNames_(std::move(onnxNames)), parent_(parent) {}

  Graph &graph() { return graph_; }
  const ModelFolder &modelDir() const { return modelDir_; }
  const OpsetMap &opsets() const { return opsets_; }
  /// The opset imported for `domain` (canonical form), 0 if none.
  int64_t opset(const std::string &domain) const;

  /// The value an ONNX name is bound to, or null. In a subgraph, a name the
  /// enclosing graphs define (ONNX lexical scoping) is captured: it becomes
  /// an input of this graph, bound to the name, and the outer value is
  /// recorded in captures() (ir/Subgraph.h).
  Value *lookup(const std::string &name);
  /// Whether lookup would find `name` here or in an enclosing graph.
  bool canResolve(const std::string &name) const;
  void bind(const std::string &name, Value *value) { values_[name] = value; }
  /// The outer values captured so far, in the order of their inputs.
  const std::vector<Value *> &captures() const { return captures_; }

  /// A value name based on `base` used neither by the ONNX graph nor the IR.
  std::string freshName(const std::string &base);

  /// The shape the file's value_info states for the node result `name`
  /// (-1 for a dim it does not give as a number), or null. Node results are
  /// typed by shape inference after the import, so this is what an importer
  /// can know of one while it imports; it is a claim of the file, which
  /// inference then checks where it can.
  const std::vector<int64_t> *declaredDims(const std::string &name) const;
  void declareDims(const std::string &name, std::vector<int64_t> dims) {
    declaredDims_[name] = std::move(dims);
  }

private:
  Graph &graph_;
  ModelFolder modelDir_;
  OpsetMap opsets_;
  std::unordered_set<std::string> onnxNames_;
  std::unordered_map<std::string, Value *> values_;
  std::unordered_map<std::string, std::vector<int64_t>> declaredDims_;
  ImportContext *parent_;
  std::vector<Value *> captures_;
};

/// One ONNX node being imported, with the IR op its registry entry names.
class OnnxNode {
public:
  OnnxNode(const onnx::NodeProto &proto, ImportContext &context, OpKind kind, int64_t opset)
      : proto_(proto), context_(context), kind_(kind), opset_(opset) {}

  const onnx::NodeProto &proto() const { return proto_; }
  ImportContext &context() { return context_; }
  /// The IR op of the registry entry (for 1:1 importers).
  OpKind kind() const { return kind_; }
  /// The opset of the node's domain.
  int64_t opset() const { return opset_; }
  /// "node 'name'" (or "node Op 'output'" for unnamed nodes).
  std::string describe() const;

  /// The inputs as values: null for empty (absent optional) names, with
  /// trailing nulls dropped.
  std::vector<Value *> operands() const;
  /// The dims of input `index` as far as the import can see them: its type
  /// (a graph input, a constant) or else the file's value_info, -1 for a dim
  /// not known as a number; empty when its rank is unknown or it is absent.
  std::vector<int64_t> knownDims(size_t index) const;
  /// Every attribute, converted.
  AttributeMap attributes() const;
  /// Attribute `name` as an int or a float, `fallback` when absent; another kind fails
  /// naming the node.
  int64_t intAttribute(const char *name, int64_t fallback) const;
  float floatAttribute(const char *name, float fallback) const;
  /// Fails on any attribute outside `known`, naming the node and the attribute.
  void requireAttributesAmong(std::initializer_list<const char *> known) const;

  /// Adds a constant to the graph, named after this node's first output.
  Value *addConstant(const std::string &suffix, Tensor value);
  /// Creates the IR node for this ONNX node: checks the operand and result
  /// counts against the op table, names results after the ONNX outputs
  /// (generating names for empty optional ones; trailing empty ones are
  /// dropped) and binds them.
  Node *emit(OpKind kind, const std::vector<Value *> &operands, const AttributeMap &attributes);
  /// Creates one intermediate node of an expansion (an op ONNX defines as a
  /// function of others): a single result named after this node's first
  /// output and `suffix`, bound to no ONNX name.
  Value *emitStep(OpKind kind, const std::vector<Value *> &operands, const std::string &suffix,
                  const AttributeMap &attributes = {});
  /// Creates the node defining output `index` alone (of an expansion with
  /// several outputs), named after that output and bound to it.
  void emitOutput(size_t index, OpKind kind, const std::vector<Value *> &operands,
                  const AttributeMap &attributes = {});
  /// Binds output `index` to an existing value (e.g. a folded constant).
  void bindOutput(size_t index, Value *value);

private:
  const onnx::NodeProto &proto_;
  ImportContext &context_;
  OpKind kind_;
  int64_t opset_;
};

/// "node 'name'" for a named node, else "node Op 'first output'".
std::string describeNodeProto(const onnx::NodeProto &proto);

} // namespace onnxc
