//===- exporter/OnnxGraphWriter.h - Building one ONNX GraphProto ------------===//
//
// The exporter's state while it writes nodes: the ONNX name of each IR value,
// fresh names for the values a decomposition adds, and helpers that append
// nodes and small initializers. Node exporters (NodeExport.h) use only this.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "exporter/OnnxExporter.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace onnxc {

/// The ONNX TensorProto data type of a dtype (0 for Unknown).
int32_t onnxDataType(DType dtype);
/// Fills `proto` with the tensor's dims, type and raw bytes. Throws
/// onnxc::Error naming `context` for an elided tensor.
void tensorToProto(const Tensor &tensor, onnx::TensorProto &proto, const std::string &context);

/// Adds an INT / INTS attribute to a node being written.
void addIntAttribute(onnx::NodeProto &node, const std::string &name, int64_t value);
void addIntsAttribute(onnx::NodeProto &node, const std::string &name,
                      const std::vector<int64_t> &values);

class OnnxGraphWriter {
public:
  OnnxGraphWriter(const Graph &graph, onnx::GraphProto &proto, OnnxExportReport &report);

  /// The ONNX name of a value; "" for an absent operand.
  std::string name(const Value *value) const;
  /// Gives `value` another ONNX name (an output's name claimed by another value).
  void rename(const Value *value, std::string name) { renamed_[value] = std::move(name); }
  /// A name no IR value and no earlier fresh name has, based on `base`.
  std::string freshName(const std::string &base);

  /// Appends a node in the default domain. Trailing empty inputs are dropped.
  onnx::NodeProto &addNode(std::string_view opType, std::vector<std::string> inputs,
                           std::vector<std::string> outputs, const std::string &nodeName);
  /// Appends a node with one fresh output named after `hint`; returns that name.
  std::string addTemp(std::string_view opType, std::vector<std::string> inputs,
                      const std::string &hint, const std::string &nodeName);
  /// An initializer holding `tensor`; returns its (fresh) name.
  std::string addInitializer(const std::string &base, const Tensor &tensor);
  /// A 1-D i64 initializer (axes, perms, shapes).
  std::string int64s(const std::string &base, const std::vector<int64_t> &values);
  /// A rank-0 initializer of `dtype` holding `value`.
  std::string scalar(const std::string &base, DType dtype, double value);

  /// Copies every attribute of `node` to `proto` except those in `skip`.
  void copyAttributes(const Node &node, onnx::NodeProto &proto,
                      const std::unordered_set<std::string> &skip = {}) const;
  /// Writes `node` as it is, in the default domain.
  void exportAsIs(const Node &node);
  /// Writes `node` as it is in the `onnxc` domain and records its op type.
  void exportCustom(const Node &node);

  const Graph &graph() const { return graph_; }

private:
  const Graph &graph_;
  onnx::GraphProto &proto_;
  OnnxExportReport &report_;
  std::unordered_map<const Value *, std::string> renamed_;
  std::unordered_set<std::string> taken_;
  std::unordered_set<std::string> nodeNames_;
};

} // namespace onnxc
