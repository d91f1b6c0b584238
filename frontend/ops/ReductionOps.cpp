//===- frontend/ops/ReductionOps.cpp - Reduce*, ArgMax/ArgMin, CumSum/Prod --===//
//
// ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceSumSquare and ReduceLogSumExp took `axes` as an attribute until
// opset 18, which made it an optional input (ReduceSum did
// so at 13). The IR has the newer form only, so older nodes get their axes
// as a constant operand.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"

#include "ir/Error.h"

namespace onnxc {

namespace {

void importReduceWithAxesAttribute(OnnxNode &node) {
  std::vector<Value *> operands = node.operands();
  if (operands.size() > 1)
    fail(node.describe(), ": ", node.proto().op_type(),
         " before opset 18 takes its axes as an attribute, not an input");
  AttributeMap attributes = node.attributes();
  auto it = attributes.find("axes");
  if (it != attributes.end()) {
    if (it->second.kind() != Attribute::Kind::Ints)
      fail(node.describe(), ": attribute 'axes' must be a list of ints");
    std::vector<int64_t> axes = it->second.asInts();
    attributes.erase(it);
    // No axes and an empty axes list both mean "reduce over all axes", which
    // is also what the newer form does without the operand.
    if (!axes.empty()) {
      int64_t count = int64_t(axes.size());
      operands.resize(1);
      operands.push_back(node.addConstant("axes", Tensor::fromVector<int64_t>({count}, axes)));
    }
  }
  node.emit(node.kind(), operands, attributes);
}

} // namespace

void registerReductionImporters(OpImporterRegistry &registry) {
  for (OpKind kind :
       {OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::ReduceProd,
        OpKind::ReduceL1, OpKind::ReduceL2, OpKind::ReduceSumSquare, OpKind::ReduceLogSumExp}) {
    registry.add({"", std::string(opName(kind)), 13, kind, importReduceWithAxesAttribute});
    registry.addOneToOne(kind, 18);
  }
  registry.addOneToOne(OpKind::ReduceSum, 13);
  registry.addOneToOne(OpKind::ArgMax, 13);
  registry.addOneToOne(OpKind::ArgMin, 13);
  registry.addOneToOne(OpKind::CumSum, 13);
  registry.addOneToOne(OpKind::CumProd, 26);
}

} // namespace onnxc
