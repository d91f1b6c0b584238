//===- driver/HalfInterface.cpp - f32 inputs and outputs for a half model's generator -===//
#include "driver/HalfInterface.h"

#include "ir/DType.h"

#include <set>

namespace onnxc {

namespace {

Value *createCast(Graph &graph, Value *value, DType type) {
  Node *cast = graph.createNode(OpKind::Cast, {value}, 1, "",
                                {value->name() + (type == DType::F32 ? "_f32" : "_half")});
  cast->setAttr("to", Attribute(onnxTypeCode(type)));
  cast->result()->setType({type, value->shape()});
  return cast->result();
}

bool isCastTo(const Node *node, DType type) {
  return node && node->kind() == OpKind::Cast && node->result()->dtype() == type;
}

/// Makes the half input `input` f32: its widening Casts read it directly,
/// other readers read it rounded to `half`.
void widenInput(Graph &graph, Value *input, DType half) {
  input->setDType(DType::F32);
  Value *rounded = nullptr;
  for (const Use &use : std::vector<Use>(input->uses())) {
    Node *user = use.user;
    if (isCastTo(user, DType::F32)) {
      graph.replaceAllUsesWith(user->result(), input);
      graph.eraseNode(user);
      continue;
    }
    if (!rounded)
      rounded = createCast(graph, input, half);
    if (user != rounded->definingNode())
      user->setOperand(use.operandIndex, rounded);
  }
}

} // namespace

std::string widenHalfInterface(Graph &graph) {
  int inputs = 0, outputs = 0;
  std::set<std::string> types;
  for (Value *input : std::vector<Value *>(graph.inputs())) {
    if (!isHalfFloat(input->dtype()))
      continue;
    types.insert(std::string(dtypeName(input->dtype())));
    widenInput(graph, input, input->dtype());
    ++inputs;
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    Value *value = graph.outputs()[i].value;
    if (!isHalfFloat(value->dtype()))
      continue;
    types.insert(std::string(dtypeName(value->dtype())));
    Node *rounding = value->definingNode();
    bool unrounds =
        rounding && rounding->kind() == OpKind::Cast && rounding->operand(0)->dtype() == DType::F32;
    graph.setOutputValue(i, unrounds ? rounding->operand(0) : createCast(graph, value, DType::F32));
    if (unrounds && !rounding->result()->hasUses() && !graph.isOutput(rounding->result()))
      graph.eraseNode(rounding);
    ++outputs;
  }
  if (inputs == 0 && outputs == 0)
    return "";
  graph.sortTopologically();
  std::string names;
  for (const std::string &type : types)
    names += (names.empty() ? "" : "/") + type;
  return "f32 interface: " + std::to_string(inputs) + " inputs and " + std::to_string(outputs) +
         " outputs were " + names;
}

} // namespace onnxc
