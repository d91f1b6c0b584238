//===- frontend/ops/MicrosoftAttentionSupport.cpp - Helpers of the contrib attention importers
//-===//
#include "frontend/ops/MicrosoftAttentionSupport.h"

#include "ir/Error.h"

namespace onnxc::contrib {

ContribAttributes::ContribAttributes(OnnxNode &node)
    : node_(node), attributes_(node.attributes()) {}

void ContribAttributes::requireKnown(std::initializer_list<const char *> known) const {
  for (const auto &[name, value] : attributes_) {
    bool ok = false;
    for (const char *k : known)
      ok = ok || name == k;
    if (!ok)
      fail(node_.describe(), ": attribute '", name, "' of com.microsoft.", node_.proto().op_type(),
           " is not supported");
  }
}

int64_t ContribAttributes::getInt(const char *name, int64_t fallback) const {
  auto it = attributes_.find(name);
  if (it == attributes_.end())
    return fallback;
  if (!it->second.isInt())
    fail(node_.describe(), ": attribute '", name, "' must be an int");
  return it->second.asInt();
}

int64_t ContribAttributes::requireInt(const char *name) const {
  if (!attributes_.count(name))
    fail(node_.describe(), ": missing required attribute '", name, "'");
  return getInt(name, 0);
}

float ContribAttributes::getFloat(const char *name, float fallback) const {
  auto it = attributes_.find(name);
  if (it == attributes_.end())
    return fallback;
  if (!it->second.isFloat())
    fail(node_.describe(), ": attribute '", name, "' must be a float");
  return it->second.asFloat();
}

void ContribAttributes::requireIntValue(const char *name, int64_t expected, const char *why) const {
  int64_t value = getInt(name, expected);
  if (value != expected)
    fail(node_.describe(), ": ", node_.proto().op_type(), " with ", name, " = ", value,
         " is not supported (", why, ")");
}

std::vector<Value *> contribInputs(OnnxNode &node, size_t count) {
  std::vector<Value *> inputs = node.operands();
  if (inputs.size() > count)
    fail(node.describe(), ": ", node.proto().op_type(), " takes at most ", count, " inputs, got ",
         inputs.size());
  inputs.resize(count, nullptr);
  return inputs;
}

std::vector<Value *> trimmed(std::vector<Value *> operands) {
  while (!operands.empty() && !operands.back())
    operands.pop_back();
  return operands;
}

void refuseInput(OnnxNode &node, const std::vector<Value *> &inputs, size_t index,
                 const char *name) {
  if (index < inputs.size() && inputs[index])
    fail(node.describe(), ": ", node.proto().op_type(), " input '", name, "' is not supported");
}

void refuseOutput(OnnxNode &node, int index, const char *name) {
  if (index < node.proto().output_size() && !node.proto().output(index).empty())
    fail(node.describe(), ": ", node.proto().op_type(), " output '", name, "' is not supported");
}

Value *i64Constant(OnnxNode &node, const std::string &name, std::vector<int64_t> values) {
  int64_t n = int64_t(values.size());
  return node.addConstant(name, Tensor::fromVector<int64_t>({n}, values));
}

Value *dimOf(OnnxNode &node, Value *x, int64_t axis, const std::string &name) {
  Value *shape = node.emitStep(OpKind::Shape, {x}, name + "_shape");
  return node.emitStep(OpKind::Gather, {shape, i64Constant(node, name + "_axis", {axis})}, name,
                       {{"axis", Attribute(int64_t(0))}});
}

Value *toScalar(OnnxNode &node, Value *x, const std::string &name) {
  return node.emitStep(OpKind::Reshape, {x, i64Constant(node, name + "_rank0", {})}, name);
}

Value *castTo(OnnxNode &node, Value *x, int64_t onnxCode, const std::string &name) {
  return node.emitStep(OpKind::Cast, {x}, name, {{"to", Attribute(onnxCode)}});
}

std::vector<Value *> splitConstant(OnnxNode &node, Value *x, int64_t axis,
                                   const std::vector<int64_t> &sizes, const std::string &name) {
  Graph &graph = node.context().graph();
  std::vector<std::string> names;
  for (size_t i = 0; i < sizes.size(); ++i)
    names.push_back(node.context().freshName(name + "_" + std::to_string(i)));
  Node *split = graph.createNode(OpKind::Split, {x, i64Constant(node, name + "_sizes", sizes)},
                                 unsigned(sizes.size()), node.proto().name(), names);
  split->setAttr("axis", Attribute(axis));
  std::vector<Value *> parts;
  for (size_t i = 0; i < sizes.size(); ++i)
    parts.push_back(split->result(i));
  return parts;
}

std::vector<Value *> splitPackedHeads(OnnxNode &node, Value *packed,
                                      const std::vector<int64_t> &heads, const std::string &name) {
  int64_t total = 0;
  for (int64_t h : heads)
    total += h;
  // Reshape's 0 copies the input dim: [B, S, total, -1] whatever B, S, H are.
  Value *viewed = node.emitStep(
      OpKind::Reshape, {packed, i64Constant(node, name + "_heads_shape", {0, 0, total, -1})},
      name + "_heads");
  std::vector<Value *> parts = splitConstant(node, viewed, 2, heads, name);
  Value *flat = i64Constant(node, name + "_flat_shape", {0, 0, -1});
  for (size_t i = 0; i < parts.size(); ++i)
    parts[i] = node.emitStep(OpKind::Reshape, {parts[i], flat}, name + "_part" + std::to_string(i));
  return parts;
}

Value *guarded(OnnxNode &node, Value *value, Value *ok, const std::string &message) {
  // The divisor's name is what the run-time error prints; a Cast from bool
  // is never simplified away, so the name stays on the divisor.
  Value *divisor = castTo(node, ok, kOnnxInt64, message);
  return node.emitStep(OpKind::Div, {value, divisor}, "checked");
}

Value *additiveMaskFrom(OnnxNode &node, Value *keep, bool keepIsBool, float fill, Value *like,
                        const std::string &name) {
  auto scalarLike = [&](const char *suffix, float value, Value *target) {
    Value *constant = node.addConstant(name + suffix, Tensor::scalar<float>(value));
    return node.emitStep(OpKind::CastLike, {constant, target}, name + suffix + "_like");
  };
  Value *visible = keep;
  if (!keepIsBool)
    visible =
        node.emitStep(OpKind::Greater, {keep, scalarLike("_izero", 0.0f, keep)}, name + "_visible");
  return node.emitStep(OpKind::Where,
                       {visible, scalarLike("_zero", 0.0f, like), scalarLike("_fill", fill, like)},
                       name);
}

int64_t declaredRank(const Value *value) {
  return value && value->shape().isRanked() ? int64_t(value->shape().rank()) : -1;
}

} // namespace onnxc::contrib
