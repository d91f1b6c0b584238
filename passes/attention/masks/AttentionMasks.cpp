//===- passes/attention/masks/AttentionMasks.cpp - Proving what shape-only masks hide ---===//
#include "passes/attention/masks/AttentionMasks.h"

#include "ir/Error.h"
#include "ir/eval/Evaluator.h"
#include "ir/infer/KnownContents.h"
#include "ir/shape/ShapeAssumption.h"
#include "passes/attention/masks/MaskProof.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

namespace onnxc {

namespace {

/// Masks built from shapes are small subgraphs (HF's sliding-window masks
/// take a few dozen nodes); anything bigger is not followed.
constexpr size_t kMaxMaskNodes = 256;
/// Additive values at or below this hide a score completely in f32: exp of
/// the difference to any visible score underflows to 0.
constexpr double kHidingValue = -1e4;

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

/// Evaluates a shape-only subgraph whose dims are all constant (the
/// fixed-length case) with the reference evaluator.
class MaskEvaluator {
public:
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

private:
  /// Shape (with ONNX's start/end clamping) or Size of an operand whose
  /// contents are never needed.
  static Tensor dimsOf(const Node &node) {
    const Shape &shape = node.operand(0)->shape();
    std::optional<std::vector<int64_t>> dims = shape.staticDims();
    if (!dims)
      fail(node.describe(), ": the measured shape is not static");
    if (node.kind() == OpKind::Size) {
      int64_t count = 1;
      for (int64_t d : *dims)
        if (__builtin_mul_overflow(count, d, &count))
          fail(node.describe(), ": element count overflows int64");
      return Tensor::scalar<int64_t>(count);
    }
    auto [first, last] = shapeOpRange(node, int64_t(dims->size()));
    std::vector<int64_t> picked(dims->begin() + first, dims->begin() + last);
    return Tensor::fromVector<int64_t>({int64_t(picked.size())}, picked);
  }

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

/// What the evaluation at the one length n says about each side of the
/// band: an exact limit, or "at least n - 1" (every key on that side).
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

/// Whether any dim the mask's subgraph reads or produces is symbolic.
bool involvesSymbols(const Value *mask, const std::set<const Node *> &nodes) {
  auto symbolic = [](const Shape &shape) {
    if (!shape.isRanked())
      return true;
    for (const Dim &d : shape.dims())
      if (!d.isConstant())
        return true;
    return false;
  };
  if (symbolic(mask->shape()))
    return true;
  for (const Node *node : nodes) {
    for (const Value *result : node->results())
      if (symbolic(result->shape()))
        return true;
    if (node->kind() == OpKind::Shape || node->kind() == OpKind::Size)
      if (symbolic(node->operand(0)->shape()))
        return true;
  }
  return false;
}

/// The fixed-length case: one concrete evaluation at the only length.
std::optional<KeyBand> evaluateAtLength(const Value *mask, MaskEncoding encoding, int64_t n,
                                        std::string &reason) {
  MaskEvaluator evaluator;
  const Tensor *values = nullptr;
  try {
    values = &evaluator.value(mask);
  } catch (const Error &e) {
    reason = std::string("the mask cannot be evaluated: ") + e.what();
    return std::nullopt;
  }
  if (!values->hasData()) {
    reason = "the mask cannot be evaluated: a constant has no data";
    return std::nullopt;
  }
  std::optional<ProbeResult> probe = readBand(*values, n, encoding, reason);
  if (!probe)
    return std::nullopt;
  return KeyBand{probe->belowSaturated ? KeyBand::kUnbounded : probe->below,
                 probe->aboveSaturated ? KeyBand::kUnbounded : probe->above};
}

} // namespace

bool dependsOnShapesOnly(const Value *value) {
  std::set<const Node *> nodes;
  return collectShapeOnlySubgraph(value, nodes);
}

std::optional<KeyBand> proveBandMask(const Value *mask, MaskEncoding encoding, const Dim &qSeq,
                                     const Dim &kvSeq, std::string &reason) {
  std::set<const Node *> nodes;
  if (!collectShapeOnlySubgraph(mask, nodes)) {
    reason = nodes.size() > kMaxMaskNodes
                 ? "the mask's subgraph has more than " + std::to_string(kMaxMaskNodes) + " nodes"
                 : "mask depends on input data";
    return std::nullopt;
  }
  if (qSeq.isUnknown() || kvSeq.isUnknown()) {
    reason = "the query or key length is unknown";
    return std::nullopt;
  }
  if (qSeq != kvSeq) {
    // Queries after a cache: kvSeq - qSeq must be a length (past), and the
    // band is proven around the diagonal offset by it.
    std::optional<Dim> past = Dim::trySubtract(kvSeq, qSeq);
    bool length = past && !past->isUnknown() && !past->constant() &&
                  ShapeAssumption{*past, ShapeAssumption::Kind::NonNegative, ""}.provable();
    if (!length) {
      reason = "query and key lengths differ by " + (past ? past->str() : std::string("?")) +
               ", which is not a cache length";
      return std::nullopt;
    }
  }
  if (std::optional<int64_t> n = qSeq.constant();
      n && qSeq == kvSeq && !involvesSymbols(mask, nodes))
    return evaluateAtLength(mask, encoding, *n, reason);
  try {
    mask::SymbolicEvaluator evaluator;
    return mask::proveBand(evaluator.evaluate(mask), encoding, qSeq, kvSeq);
  } catch (const mask::NotProvable &e) {
    reason = e.reason;
  } catch (const Error &e) {
    reason = std::string("shape arithmetic of the mask fails: ") + e.what();
  }
  return std::nullopt;
}

} // namespace onnxc
