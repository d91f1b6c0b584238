//===- passes/AttentionMasks.cpp - Probing shape-only attention masks -----===//
#include "passes/AttentionMasks.h"

#include "ir/Error.h"
#include "ir/eval/Evaluator.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

namespace onnxc {

namespace {

/// Masks built from shapes are small subgraphs; anything bigger is not one.
constexpr size_t kMaxMaskNodes = 64;
/// Additive values at or below this hide a score completely in f32: exp of
/// the difference to any visible score underflows to 0.
constexpr double kHidingValue = -1e4;
constexpr int64_t kProbeLengths[] = {1, 2, 3, 4, 5, 7, 9, 16, 33, 64, 100};

/// The nodes `value` is computed by, stopping at constants and at the
/// operands of Shape/Size (only their dims matter). False when the subgraph
/// reads a graph input's contents or is too large.
bool collectShapeOnlySubgraph(const Value *value, std::set<const Node *> &nodes) {
  if (value->isConstant())
    return true;
  if (value->isGraphInput())
    return false;
  const Node *node = value->definingNode();
  if (!nodes.insert(node).second)
    return true;
  if (nodes.size() > kMaxMaskNodes)
    return false;
  if (node->kind() == OpKind::Shape || node->kind() == OpKind::Size)
    return true;
  for (const Value *operand : node->operands())
    if (operand && !collectShapeOnlySubgraph(operand, nodes))
      return false;
  return true;
}

/// Evaluates values of a shape-only subgraph with every symbol bound.
class MaskEvaluator {
public:
  explicit MaskEvaluator(std::map<std::string, int64_t> bindings)
      : bindings_(std::move(bindings)) {}

  const Tensor &value(const Value *value) {
    if (value->isConstant())
      return value->constantValue();
    auto found = results_.find(value);
    if (found != results_.end())
      return found->second;
    const Node &node = *value->definingNode();
    if (node.kind() == OpKind::Shape || node.kind() == OpKind::Size)
      return results_[value] = dimsOf(node);
    std::vector<const Tensor *> operands(node.numOperands(), nullptr);
    for (size_t i = 0; i < node.numOperands(); ++i)
      if (const Value *operand = node.operand(i))
        operands[i] = &this->value(operand);
    std::vector<Tensor> results = evaluateNode(node, operands);
    for (size_t i = 0; i < results.size(); ++i)
      results_[node.result(i)] = std::move(results[i]);
    return results_.at(value);
  }

  /// Shape (with ONNX's start/end clamping) or Size of an operand whose
  /// contents are never needed.
  Tensor dimsOf(const Node &node) const {
    std::vector<int64_t> dims = concreteDims(node.operand(0)->shape());
    if (node.kind() == OpKind::Size) {
      int64_t count = 1;
      for (int64_t d : dims)
        count *= d;
      return Tensor::scalar<int64_t>(count);
    }
    int64_t rank = int64_t(dims.size());
    auto clampAxis = [rank](int64_t axis) {
      return std::clamp(axis < 0 ? axis + rank : axis, int64_t(0), rank);
    };
    int64_t start = clampAxis(node.getInt("start", 0)), end = clampAxis(node.getInt("end", rank));
    std::vector<int64_t> picked(dims.begin() + start, dims.begin() + std::max(start, end));
    return Tensor::fromVector<int64_t>({int64_t(picked.size())}, picked);
  }

  int64_t evaluate(const Dim &dim) const {
    std::optional<int64_t> v = dim.evaluate(bindings_);
    if (!v)
      fail("dimension ", dim.str(), " has no value");
    return *v;
  }

  std::vector<int64_t> concreteDims(const Shape &shape) const {
    if (!shape.isRanked())
      fail("unranked shape");
    std::vector<int64_t> dims;
    for (const Dim &d : shape.dims())
      dims.push_back(evaluate(d));
    return dims;
  }

private:
  std::map<std::string, int64_t> bindings_;
  std::unordered_map<const Value *, Tensor> results_;
};

/// Whether element (i, j) of the evaluated mask hides the score, or nullopt
/// for a value that neither keeps nor hides (an additive 0.5, say).
std::optional<bool> hides(const Tensor &mask, int64_t index, MaskEncoding encoding) {
  double v = mask.elementAsDouble(index);
  switch (encoding) {
  case MaskEncoding::Additive:
    if (v == 0.0)
      return false;
    if (v <= kHidingValue)
      return true;
    return std::nullopt;
  case MaskEncoding::HiddenWhereTrue:
    return v != 0.0;
  case MaskEncoding::HiddenWhereFalse:
    return v == 0.0;
  }
  return std::nullopt;
}

/// What one probe of size n says about each side of the band: an exact
/// limit, or "at least n - 1" (the probe cannot see further).
struct ProbeResult {
  int64_t below, above;
  bool belowSaturated, aboveSaturated;
};

std::optional<ProbeResult> readBand(const Tensor &mask, int64_t n, MaskEncoding encoding,
                                    std::string &reason) {
  const std::vector<int64_t> &dims = mask.dims();
  if (dims.size() < 2 || dims[dims.size() - 1] != n || dims[dims.size() - 2] != n) {
    reason = "mask is not [.., seq, seq]";
    return std::nullopt;
  }
  for (size_t i = 0; i + 2 < dims.size(); ++i)
    if (dims[i] != 1) {
      reason = "mask varies over batch or heads";
      return std::nullopt;
    }
  // Visible offsets: the band's sides are the largest visible i - j and
  // j - i; then every entry must agree with that band.
  int64_t below = -1, above = -1;
  std::vector<char> hidden(size_t(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      std::optional<bool> h = hides(mask, i * n + j, encoding);
      if (!h) {
        reason = "mask has values that neither keep (0) nor hide (<= -1e4) a score";
        return std::nullopt;
      }
      hidden[size_t(i * n + j)] = *h;
      if (!*h) {
        below = std::max(below, i - j);
        above = std::max(above, j - i);
      }
    }
  if (below < 0 && above < 0) {
    reason = "mask hides every key";
    return std::nullopt;
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      bool inBand = i - j <= below && j - i <= above;
      if (inBand == bool(hidden[size_t(i * n + j)])) {
        reason = "mask is not a band around the diagonal";
        return std::nullopt;
      }
    }
  if (below < 0 || above < 0) {
    reason = "mask hides the diagonal";
    return std::nullopt;
  }
  return ProbeResult{below, above, below >= n - 1, above >= n - 1};
}

/// Folds one probe's side into what is known so far: an exact limit must
/// agree with every probe, a saturated one only says "at least".
bool mergeSide(std::optional<int64_t> &exact, int64_t &atLeast, int64_t value, bool saturated) {
  if (saturated) {
    atLeast = std::max(atLeast, value);
    return !exact || *exact >= value;
  }
  if (exact && *exact != value)
    return false;
  exact = value;
  return value >= atLeast;
}

} // namespace

bool dependsOnShapesOnly(const Value *value) {
  std::set<const Node *> nodes;
  return collectShapeOnlySubgraph(value, nodes);
}

std::optional<KeyBand> probeBandMask(const Value *mask, MaskEncoding encoding, const Dim &qSeq,
                                     const Dim &kvSeq, std::string &reason) {
  std::set<const Node *> nodes;
  if (!collectShapeOnlySubgraph(mask, nodes)) {
    reason = "mask depends on input data";
    return std::nullopt;
  }
  if (qSeq != kvSeq) {
    reason = "query and key lengths differ";
    return std::nullopt;
  }
  std::set<std::string> symbols;
  auto addSymbols = [&](const Shape &shape) {
    if (shape.isRanked())
      for (const Dim &d : shape.dims())
        for (const std::string &s : d.symbols())
          symbols.insert(s);
  };
  addSymbols(mask->shape());
  for (const std::string &s : qSeq.symbols())
    symbols.insert(s);
  for (const Node *node : nodes)
    if (node->kind() == OpKind::Shape || node->kind() == OpKind::Size)
      addSymbols(node->operand(0)->shape());

  std::optional<int64_t> below, above;
  int64_t belowAtLeast = 0, aboveAtLeast = 0, probes = 0;
  // A fixed sequence length is the only one the graph runs at: one probe
  // there is the whole truth.
  std::vector<int64_t> lengths(std::begin(kProbeLengths), std::end(kProbeLengths));
  std::optional<int64_t> fixedLength = qSeq.constant();
  if (fixedLength)
    lengths = {*fixedLength};
  for (int64_t n : lengths) {
    std::map<std::string, int64_t> bindings;
    for (const std::string &s : symbols)
      bindings[s] = n;
    MaskEvaluator evaluator(bindings);
    const Tensor *values = nullptr;
    try {
      if (evaluator.evaluate(qSeq) != n)
        continue; // the sequence is not a plain symbol; n is not a length here
      values = &evaluator.value(mask);
      if (!values->hasData())
        continue;
    } catch (const Error &) {
      continue; // a length the graph itself rejects (past a stored table)
    }
    std::optional<ProbeResult> probe = readBand(*values, n, encoding, reason);
    if (!probe) {
      const std::vector<int64_t> &dims = values->dims();
      bool shortTable = dims.size() >= 2 && (dims.back() != n || dims[dims.size() - 2] != n);
      if (shortTable && probes > 0)
        continue; // sliced past the stored table: the original fails there too
      return std::nullopt;
    }
    ++probes;
    if (!mergeSide(below, belowAtLeast, probe->below, probe->belowSaturated) ||
        !mergeSide(above, aboveAtLeast, probe->above, probe->aboveSaturated)) {
      reason = "mask changes shape with the sequence length";
      return std::nullopt;
    }
  }
  if (probes < (fixedLength ? 1 : 3)) {
    reason = "mask could not be evaluated at enough sequence lengths";
    return std::nullopt;
  }
  return KeyBand{below.value_or(KeyBand::kUnbounded), above.value_or(KeyBand::kUnbounded)};
}

} // namespace onnxc
