//===- ir/Verifier.cpp - Structural checks of a graph -----------------------===//
//
// Runs after parsing and (in tests and with --verify-each) after every pass,
// so it must never crash on the broken graphs it exists to catch: pointers
// (users, operands) are checked for membership in this graph before they are
// followed.
//
// Every check is linear in the size of the graph: a value used by 200,000
// nodes must not cost 200,000 scans of its use list, so recorded uses are
// counted once per value in a hash table and looked up per operand.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"

#include "ir/Error.h"
#include "ir/Subgraph.h"

#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace onnxc {

namespace {

std::string describeValue(const Value *value) { return "value '%" + value->name() + "'"; }

/// One entry of one value's use list, as a hash key.
struct RecordedUse {
  const Value *value;
  const Node *user;
  unsigned operandIndex;
  bool operator==(const RecordedUse &o) const {
    return value == o.value && user == o.user && operandIndex == o.operandIndex;
  }
};

struct RecordedUseHash {
  size_t operator()(const RecordedUse &use) const {
    size_t h = std::hash<const void *>()(use.value);
    h = h * 31 + std::hash<const void *>()(use.user);
    return h * 31 + use.operandIndex;
  }
};

class GraphVerifier {
public:
  explicit GraphVerifier(const Graph &graph) : graph_(graph) {}

  void run() {
    for (const auto &node : graph_.nodes())
      liveNodes_.insert(node.get());
    for (const Value *input : graph_.inputs())
      checkInput(input);
    for (const Value *constant : graph_.constants())
      checkConstant(constant);
    for (const auto &node : graph_.nodes())
      checkNode(*node);
    checkOutputs();
    // Use lists last: every node is known live by now, and every value that
    // can be used has been seen.
    for (const Value *value : available_)
      checkUses(value);
  }

private:
  void checkOwnedValue(const Value *value) {
    if (value->graph() != &graph_)
      fail(describeValue(value), " belongs to another graph");
    if (graph_.findValue(value->name()) != value)
      fail(describeValue(value), " is not registered under its name in graph '", graph_.name(),
           "'");
  }

  void checkInput(const Value *input) {
    checkOwnedValue(input);
    if (!input->isGraphInput())
      fail(describeValue(input), " is listed as a graph input but is not one");
    available_.push_back(input);
    availableSet_.insert(input);
  }

  void checkConstant(const Value *constant) {
    checkOwnedValue(constant);
    if (!constant->isConstant())
      fail(describeValue(constant), " is listed as a constant but is not one");
    if (!constant->constantPtr())
      fail("constant '%", constant->name(), "' has no data");
    const Tensor &data = constant->constantValue();
    TensorType expected{data.dtype(), Shape::fromConstants(data.dims())};
    if (constant->type() != expected)
      fail("constant '%", constant->name(), "' has type ", constant->type().str(),
           " but its data is ", expected.str());
    available_.push_back(constant);
    availableSet_.insert(constant);
  }

  void checkCounts(const Node &node);
  void checkNode(const Node &node);
  void checkUses(const Value *value);
  void checkOutputs();

  /// How often `value`'s use list records operand `operandIndex` of `user`
  /// (the list is tallied on first asking, once per value).
  unsigned recordedCount(const Value *value, const Node *user, unsigned operandIndex) {
    if (tallied_.insert(value).second)
      for (const Use &use : value->uses())
        ++recorded_[{value, use.user, use.operandIndex}];
    auto it = recorded_.find({value, user, operandIndex});
    return it == recorded_.end() ? 0 : it->second;
  }

  const Graph &graph_;
  std::unordered_set<const Node *> liveNodes_;
  std::vector<const Value *> available_; // in definition order
  std::unordered_set<const Value *> availableSet_;
  std::unordered_set<const Value *> tallied_;
  std::unordered_map<RecordedUse, unsigned, RecordedUseHash> recorded_;
};

// --- per-op attribute sanity ------------------------------------------------
// Only checks that catch garbage early (wrong attribute kinds, impossible
// axes); the full rules live in shape inference.

const Attribute *attrOfKind(const Node &node, const std::string &name, Attribute::Kind kind,
                            const char *kindName, bool required) {
  const Attribute *attr = node.findAttr(name);
  if (!attr) {
    if (required)
      fail(node.describe(), ": missing required attribute '", name, "'");
    return nullptr;
  }
  if (attr->kind() != kind)
    fail(node.describe(), ": attribute '", name, "' must be ", kindName);
  return attr;
}

// Checks an int axis attribute against the rank of operand 0, when known.
// `allowRank` admits axis == rank (Flatten).
void checkAxis(const Node &node, bool required, bool allowRank = false) {
  const Attribute *attr = attrOfKind(node, "axis", Attribute::Kind::Int, "an int", required);
  const Value *input = node.operand(0);
  if (!attr || !input || !input->shape().isRanked())
    return;
  int64_t rank = int64_t(input->shape().rank()), axis = attr->asInt();
  int64_t high = allowRank ? rank : rank - 1;
  if (axis < -rank || axis > high)
    fail(node.describe(), ": axis ", axis, " is out of range for rank ", rank);
}

void checkPerm(const Node &node) {
  const Attribute *attr = attrOfKind(node, "perm", Attribute::Kind::Ints, "a list of ints", false);
  if (!attr)
    return;
  const std::vector<int64_t> &perm = attr->asInts();
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(perm.size()) || seen[size_t(p)])
      fail(node.describe(), ": perm is not a permutation of 0..", int64_t(perm.size()) - 1);
    seen[size_t(p)] = true;
  }
  const Value *input = node.operand(0);
  if (input && input->shape().isRanked() && input->shape().rank() != perm.size())
    fail(node.describe(), ": perm has ", perm.size(), " entries but the input has rank ",
         input->shape().rank());
}

void checkNodeAttributes(const Node &node) {
  switch (node.kind()) {
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::Gather:
  case OpKind::GatherElements:
  case OpKind::LayerNormalization:
  case OpKind::ArgMax:
  case OpKind::ArgMin:
  case OpKind::Split:
    checkAxis(node, /*required=*/false);
    break;
  case OpKind::Concat:
    checkAxis(node, /*required=*/true);
    break;
  case OpKind::Flatten:
    checkAxis(node, /*required=*/false, /*allowRank=*/true);
    break;
  case OpKind::Transpose:
    checkPerm(node);
    break;
  case OpKind::AdditiveAttention:
    if (const Attribute *fill = node.findAttr("mask_fill"); fill && !fill->isFloat())
      fail(node.describe(), ": attribute 'mask_fill' must be a float");
    break;
  default:
    break;
  }
}

void GraphVerifier::checkCounts(const Node &node) {
  const OpInfo &info = opInfo(node.kind());
  int numOperands = int(node.numOperands());
  if (numOperands < info.minOperands || (info.maxOperands >= 0 && numOperands > info.maxOperands))
    fail(node.describe(), ": ", node.opName(), " takes ",
         describeCountRange(info.minOperands, info.maxOperands), " operands, got ", numOperands);
  int numResults = int(node.numResults());
  if (numResults < info.minResults || (info.maxResults >= 0 && numResults > info.maxResults))
    fail(node.describe(), ": ", node.opName(), " has ",
         describeCountRange(info.minResults, info.maxResults), " results, got ", numResults);
  if (numOperands > 0 && !node.operands().back())
    fail(node.describe(), ": operand list ends with an absent operand");
  // Operands before minOperands are required in every op of the table, and
  // variadic ops (Concat, Sum, ...) have no optional operands at all.
  // Loop's trip count and condition are optional although it is variadic.
  int firstRequired = node.kind() == OpKind::Loop ? 2 : 0;
  for (int i = firstRequired; i < numOperands; ++i)
    if (!node.operand(size_t(i)) && (i < info.minOperands || info.maxOperands < 0))
      fail(node.describe(), ": operand ", i, " of ", node.opName(), " is required but absent");
}

void GraphVerifier::checkNode(const Node &node) {
  if (node.graph() != &graph_)
    fail(node.describe(), " belongs to another graph");
  checkCounts(node);
  for (size_t i = 0; i < node.numOperands(); ++i) {
    const Value *operand = node.operand(i);
    if (!operand)
      continue;
    if (operand->graph() != &graph_)
      fail(node.describe(), ": operand ", i, " '%", operand->name(),
           "' is a value of another graph");
    if (!availableSet_.count(operand))
      fail(node.describe(), ": operand ", i, " '%", operand->name(),
           "' is used before it is defined (or its node was erased)");
    if (recordedCount(operand, &node, unsigned(i)) != 1)
      fail(node.describe(), ": the use list of '%", operand->name(), "' does not record operand ",
           i, " exactly once");
  }
  for (size_t i = 0; i < node.numResults(); ++i) {
    const Value *result = node.result(i);
    if (!result)
      fail(node.describe(), ": result ", i, " is null");
    checkOwnedValue(result);
    if (!result->isNodeResult() || result->definingNode() != &node || result->resultIndex() != i)
      fail(describeValue(result), " is result ", i, " of ", node.describe(),
           " but does not record it as its definition");
    if (availableSet_.count(result))
      fail(describeValue(result), " is defined twice");
    available_.push_back(result);
    availableSet_.insert(result);
  }
  checkNodeAttributes(node);
  verifySubgraphs(node);
}

void GraphVerifier::checkUses(const Value *value) {
  for (const Use &use : value->uses()) {
    if (!liveNodes_.count(use.user))
      fail(describeValue(value), " has a use by a node that is not in the graph");
    if (use.user->operand(use.operandIndex) != value)
      fail(describeValue(value), " records a use as operand ", use.operandIndex, " of ",
           use.user->describe(), ", which holds another value there");
    if (recordedCount(value, use.user, use.operandIndex) > 1)
      fail(describeValue(value), " records the same use twice (operand ", use.operandIndex, " of ",
           use.user->describe(), ")");
  }
}

void GraphVerifier::checkOutputs() {
  std::unordered_set<std::string> names;
  for (const GraphOutput &output : graph_.outputs()) {
    if (!names.insert(output.name).second)
      fail("graph output '", output.name, "' is declared twice");
    if (!output.value)
      fail("graph output '", output.name, "' is not bound to a value");
    if (output.value->graph() != &graph_)
      fail("graph output '", output.name, "' is bound to a value of another graph");
    if (!availableSet_.count(output.value))
      fail("graph output '", output.name, "' is bound to '%", output.value->name(),
           "', which is not defined in the graph");
  }
}

} // namespace

void verifyGraph(const Graph &graph) { GraphVerifier(graph).run(); }

} // namespace onnxc
