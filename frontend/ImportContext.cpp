//===- frontend/ImportContext.cpp - State shared by the op importers --------===//
#include "frontend/ImportContext.h"

#include "frontend/AttributeProto.h"
#include "ir/Error.h"

namespace onnxc {

// --- ImportContext -------------------------------------------------------------

int64_t ImportContext::opset(const std::string &domain) const {
  auto it = opsets_.find(domain);
  return it == opsets_.end() ? 0 : it->second;
}

Value *ImportContext::lookup(const std::string &name) {
  auto it = values_.find(name);
  if (it != values_.end())
    return it->second;
  Value *outer = parent_ ? parent_->lookup(name) : nullptr;
  if (!outer)
    return nullptr;
  // A weight is shared, not captured: the subgraph gets a constant of its
  // own over the same data, which its folding and codegen can see.
  if (outer->isConstant()) {
    Value *constant = graph_.addConstant(freshName(name), outer->constantPtr());
    bind(name, constant);
    return constant;
  }
  Value *input = graph_.addInput(freshName(name), outer->type());
  bind(name, input);
  captures_.push_back(outer);
  return input;
}

bool ImportContext::canResolve(const std::string &name) const {
  return values_.count(name) || (parent_ && parent_->canResolve(name));
}

const std::vector<int64_t> *ImportContext::declaredDims(const std::string &name) const {
  auto found = declaredDims_.find(name);
  return found == declaredDims_.end() ? nullptr : &found->second;
}

std::string ImportContext::freshName(const std::string &base) {
  std::string stem = base.empty() ? "v" : base;
  std::string name = stem;
  for (unsigned i = 1; onnxNames_.count(name) || graph_.findValue(name); ++i)
    name = stem + "_" + std::to_string(i);
  // Claim it so two fresh names asked for before either is used differ.
  onnxNames_.insert(name);
  return name;
}

// --- OnnxNode ------------------------------------------------------------------

std::string describeNodeProto(const onnx::NodeProto &proto) {
  if (!proto.name().empty())
    return "node '" + proto.name() + "'";
  std::string out = "node " + proto.op_type();
  for (const std::string &output : proto.output())
    if (!output.empty())
      return out + " '" + output + "'";
  return out;
}

std::string OnnxNode::describe() const { return describeNodeProto(proto_); }

int64_t OnnxNode::intAttribute(const char *name, int64_t fallback) const {
  AttributeMap all = attributes();
  auto it = all.find(name);
  if (it == all.end())
    return fallback;
  if (!it->second.isInt())
    fail(describe(), ": attribute '", name, "' must be an int");
  return it->second.asInt();
}

float OnnxNode::floatAttribute(const char *name, float fallback) const {
  AttributeMap all = attributes();
  auto it = all.find(name);
  if (it == all.end())
    return fallback;
  if (!it->second.isFloat())
    fail(describe(), ": attribute '", name, "' must be a float");
  return it->second.asFloat();
}

void OnnxNode::requireAttributesAmong(std::initializer_list<const char *> known) const {
  for (const auto &[name, value] : attributes()) {
    bool ok = false;
    for (const char *k : known)
      ok = ok || name == k;
    if (!ok)
      fail(describe(), ": attribute '", name, "' of ", proto_.op_type(), " is not supported");
  }
}

std::vector<Value *> OnnxNode::operands() const {
  std::vector<Value *> out;
  for (const std::string &name : proto_.input()) {
    if (name.empty()) {
      out.push_back(nullptr);
      continue;
    }
    Value *value = context_.lookup(name);
    // The graph importer checked every name before importing any node.
    if (!value)
      fail(describe(), ": input '", name, "' is not defined");
    out.push_back(value);
  }
  while (!out.empty() && !out.back())
    out.pop_back();
  return out;
}

std::vector<int64_t> OnnxNode::knownDims(size_t index) const {
  if (index >= size_t(proto_.input_size()) || proto_.input(int(index)).empty())
    return {};
  const std::string &name = proto_.input(int(index));
  Value *value = context_.lookup(name);
  if (value && value->shape().isRanked()) {
    std::vector<int64_t> dims;
    for (const Dim &dim : value->shape().dims())
      dims.push_back(dim.constant().value_or(-1));
    return dims;
  }
  const std::vector<int64_t> *declared = context_.declaredDims(name);
  return declared ? *declared : std::vector<int64_t>{};
}

AttributeMap OnnxNode::attributes() const {
  AttributeMap out;
  for (const onnx::AttributeProto &attr : proto_.attribute()) {
    if (out.count(attr.name()))
      fail(describe(), ": attribute '", attr.name(), "' is given twice");
    out.emplace(attr.name(), attributeFromProto(attr, context_.modelDir(), describe()));
  }
  return out;
}

Value *OnnxNode::addConstant(const std::string &suffix, Tensor value) {
  std::string base =
      proto_.output_size() && !proto_.output(0).empty() ? proto_.output(0) : proto_.name();
  return context_.graph().addConstant(context_.freshName(base + "_" + suffix), std::move(value));
}

Node *OnnxNode::emit(OpKind kind, const std::vector<Value *> &operands,
                     const AttributeMap &attributes) {
  size_t numResults = proto_.output_size();
  while (numResults > 0 && proto_.output(int(numResults) - 1).empty())
    --numResults;
  const OpInfo &info = opInfo(kind);
  if (int(operands.size()) < info.minOperands ||
      (info.maxOperands >= 0 && int(operands.size()) > info.maxOperands))
    fail(describe(), ": ", info.name, " takes ",
         describeCountRange(info.minOperands, info.maxOperands), " inputs, got ", operands.size());
  if (int(numResults) < info.minResults ||
      (info.maxResults >= 0 && int(numResults) > info.maxResults))
    fail(describe(), ": ", info.name, " has ", describeCountRange(info.minResults, info.maxResults),
         " outputs, got ", numResults);
  for (size_t i = 0; i < operands.size(); ++i)
    if (!operands[i] && int(i) < info.minOperands)
      fail(describe(), ": required input ", i, " of ", info.name, " is empty");

  std::vector<std::string> names;
  for (size_t i = 0; i < numResults; ++i) {
    const std::string &name = proto_.output(int(i));
    names.push_back(name.empty() ? context_.freshName(
                                       proto_.name().empty() ? "unused" : proto_.name() + "_unused")
                                 : name);
  }
  Node *node =
      context_.graph().createNode(kind, operands, unsigned(numResults), proto_.name(), names);
  for (const auto &[name, value] : attributes)
    node->setAttr(name, value);
  for (size_t i = 0; i < numResults; ++i)
    if (!proto_.output(int(i)).empty())
      context_.bind(proto_.output(int(i)), node->result(i));
  return node;
}

Value *OnnxNode::emitStep(OpKind kind, const std::vector<Value *> &operands,
                          const std::string &suffix, const AttributeMap &attributes) {
  std::string base =
      proto_.output_size() && !proto_.output(0).empty() ? proto_.output(0) : proto_.name();
  Node *node = context_.graph().createNode(kind, operands, 1, proto_.name(),
                                           {context_.freshName(base + "_" + suffix)});
  for (const auto &[name, value] : attributes)
    node->setAttr(name, value);
  return node->result(0);
}

void OnnxNode::emitOutput(size_t index, OpKind kind, const std::vector<Value *> &operands,
                          const AttributeMap &attributes) {
  if (int(index) >= proto_.output_size() || proto_.output(int(index)).empty())
    fail(describe(), ": output ", index, " is missing");
  const std::string &name = proto_.output(int(index));
  Node *node = context_.graph().createNode(kind, operands, 1, proto_.name(), {name});
  for (const auto &[key, value] : attributes)
    node->setAttr(key, value);
  context_.bind(name, node->result(0));
}

void OnnxNode::bindOutput(size_t index, Value *value) {
  if (int(index) >= proto_.output_size() || proto_.output(int(index)).empty())
    fail(describe(), ": output ", index, " is missing");
  context_.bind(proto_.output(int(index)), value);
}

} // namespace onnxc
