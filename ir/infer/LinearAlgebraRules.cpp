//===- ir/infer/LinearAlgebraRules.cpp - MatMul, Gemm, Einsum shape rules -===//
//
// Also the registration entry point of the whole linear algebra family (the
// attention, convolution and recurrent rules live in their own files), the
// small dim/dtype checks they share, and the Einsum equation parser that the
// reference kernel uses too.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/LinearAlgebraRulesInternal.h"

#include "ir/Error.h"
#include "ir/Node.h"

#include <algorithm>
#include <cctype>

namespace onnxc {

// --- shared checks -----------------------------------------------------------

bool provablyDifferent(const Dim &a, const Dim &b) {
  if (a.isUnknown() || b.isUnknown())
    return false;
  std::optional<int64_t> difference = (a - b).constant();
  return difference && *difference != 0;
}

void requireSameDim(InferenceContext &context, const Node &node, const Dim &a, const Dim &b,
                    const std::string &what, const Shape &shapeA, const Shape &shapeB) {
  if (provablyDifferent(a, b))
    fail(node.describe(), ": ", what, " mismatch: ", a.str(), " vs ", b.str(), " (shapes ",
         shapeA.str(), " and ", shapeB.str(), ")");
  if (!a.provablyEqual(b))
    context.assumeEqual(node, a, b, "the " + what);
}

DType commonOperandDType(const Node &node, const std::vector<size_t> &operandIndices) {
  DType common = DType::Unknown;
  for (size_t i : operandIndices) {
    const Value *v = node.operand(i);
    if (!v || v->dtype() == DType::Unknown)
      continue;
    if (common != DType::Unknown && v->dtype() != common)
      fail(node.describe(), ": operands have different element types ", dtypeName(common), " and ",
           dtypeName(v->dtype()));
    common = v->dtype();
  }
  return common;
}

void requireOperandsPresent(const Node &node, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (!node.operand(i))
      fail(node.describe(), ": required operand ", i, " is missing");
}

void setAllResultsUnranked(Node &node, DType dtype) {
  for (Value *result : node.results())
    result->setType({dtype, Shape::unranked()});
}

namespace {

/// Numpy broadcasting of two dims: equal dims and 1s resolve exactly; a
/// symbol against a constant c > 1 must be c (or 1) and broadcasts to c;
/// two unrelated symbols give an unknown dim.
Dim broadcastDims(InferenceContext &context, const Node &node, const Dim &a, const Dim &b,
                  const Shape &shapeA, const Shape &shapeB) {
  if (a == b)
    return a;
  if (a.constant() == 1)
    return b;
  if (b.constant() == 1)
    return a;
  if (a.isConstant() && b.isConstant())
    fail(node.describe(), ": cannot broadcast ", a.str(), " with ", b.str(), " (shapes ",
         shapeA.str(), " and ", shapeB.str(), ")");
  if (a.isConstant()) {
    context.assumeBroadcastsTo(node, b, a, "the broadcast dimension");
    return a;
  }
  if (b.isConstant()) {
    context.assumeBroadcastsTo(node, a, b, "the broadcast dimension");
    return b;
  }
  return Dim::unknown();
}

void requireNumericDType(const Node &node, DType dtype) {
  if (dtype != DType::Unknown && !isFloat(dtype) && !isInteger(dtype))
    fail(node.describe(), ": ", dtypeName(dtype), " operands are not supported");
}

// --- MatMul ------------------------------------------------------------------

void inferMatMul(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 2);
  DType dtype = commonOperandDType(node, {0, 1});
  requireNumericDType(node, dtype);
  const Shape &a = node.operand(0)->shape();
  const Shape &b = node.operand(1)->shape();
  if (!a.isRanked() || !b.isRanked())
    return setAllResultsUnranked(node, dtype);
  node.result(0)->setType({dtype, matMulResultShape(context, node, a, b)});
}

// --- Gemm --------------------------------------------------------------------

void inferGemm(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 2);
  DType dtype = commonOperandDType(node, {0, 1, 2});
  requireNumericDType(node, dtype);
  const Shape &a = node.operand(0)->shape();
  const Shape &b = node.operand(1)->shape();
  if (!a.isRanked() || !b.isRanked())
    return setAllResultsUnranked(node, dtype);
  if (a.rank() != 2 || b.rank() != 2)
    fail(node.describe(), ": gemm operands must be matrices, got ", a.str(), " and ", b.str());
  bool transA = node.getInt("transA", 0) != 0;
  bool transB = node.getInt("transB", 0) != 0;
  Dim m = transA ? a[1] : a[0];
  Dim kA = transA ? a[0] : a[1];
  Dim kB = transB ? b[1] : b[0];
  Dim n = transB ? b[0] : b[1];
  requireSameDim(context, node, kA, kB, "gemm contraction dimension", a, b);

  if (const Value *c = node.operand(2); c && c->shape().isRanked()) {
    const Shape &cs = c->shape();
    if (cs.rank() > 2)
      fail(node.describe(), ": gemm bias C must have rank <= 2, got ", cs.str());
    // C broadcasts one way only: each of its dims is 1 or the result's.
    std::vector<Dim> target = {m, n};
    for (size_t i = 0; i < cs.rank(); ++i) {
      const Dim &cd = cs[i];
      const Dim &td = target[2 - cs.rank() + i];
      if (cd.constant() == 1 || cd.provablyEqual(td))
        continue;
      if (cd.isConstant() && td.isConstant())
        requireSameDim(context, node, cd, td, "gemm bias C dimension", cs, Shape(target));
      else
        context.assumeBroadcastsTo(node, cd, td, "the gemm bias C dimension");
    }
  }
  node.result(0)->setType({dtype, Shape({m, n})});
}

// --- Einsum ------------------------------------------------------------------

int einsumLetterLabel(char c) {
  if (c >= 'a' && c <= 'z')
    return c - 'a';
  if (c >= 'A' && c <= 'Z')
    return 26 + (c - 'A');
  return -1;
}

char einsumLabelLetter(int label) {
  return label < 26 ? char('a' + label) : char('A' + (label - 26));
}

constexpr int kEllipsisMarker = -1;

/// One term of the equation as letters, with kEllipsisMarker where `...` is.
std::vector<int> parseEinsumTerm(const Node &node, const std::string &term) {
  std::vector<int> labels;
  bool sawEllipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '.') {
      if (term.compare(i, 3, "...") != 0 || sawEllipsis)
        fail(node.describe(), ": einsum term '", term, "' has a malformed or repeated '...'");
      sawEllipsis = true;
      labels.push_back(kEllipsisMarker);
      i += 2;
      continue;
    }
    int label = einsumLetterLabel(term[i]);
    if (label < 0)
      fail(node.describe(), ": einsum term '", term, "' has an invalid character '", term[i], "'");
    labels.push_back(label);
  }
  return labels;
}

/// Replaces the ellipsis marker by `count` right-aligned ellipsis labels.
std::vector<int> expandEllipsis(const std::vector<int> &term, int count, int widest) {
  std::vector<int> labels;
  for (int label : term) {
    if (label != kEllipsisMarker) {
      labels.push_back(label);
      continue;
    }
    for (int j = 0; j < count; ++j)
      labels.push_back(EinsumSpec::kFirstEllipsisLabel + widest - count + j);
  }
  return labels;
}

std::vector<int> implicitEinsumOutput(const EinsumSpec &spec) {
  std::vector<int> output;
  for (int j = 0; j < spec.numEllipsisDims; ++j)
    output.push_back(EinsumSpec::kFirstEllipsisLabel + j);
  std::vector<int> counts(EinsumSpec::kFirstEllipsisLabel, 0);
  for (const auto &labels : spec.inputLabels)
    for (int label : labels)
      if (label < EinsumSpec::kFirstEllipsisLabel)
        ++counts[size_t(label)];
  // Letters used once, in character order (uppercase sorts first, as in numpy).
  std::vector<char> letters;
  for (int label = 0; label < EinsumSpec::kFirstEllipsisLabel; ++label)
    if (counts[size_t(label)] == 1)
      letters.push_back(einsumLabelLetter(label));
  std::sort(letters.begin(), letters.end());
  for (char c : letters)
    output.push_back(einsumLetterLabel(c));
  return output;
}

std::vector<int> explicitEinsumOutput(const Node &node, const EinsumSpec &spec,
                                      const std::string &rhs) {
  std::vector<int> term = parseEinsumTerm(node, rhs);
  std::vector<bool> seen(size_t(spec.numLabels()), false);
  for (const auto &labels : spec.inputLabels)
    for (int label : labels)
      seen[size_t(label)] = true;
  std::vector<bool> used(size_t(EinsumSpec::kFirstEllipsisLabel), false);
  for (int label : term) {
    if (label == kEllipsisMarker)
      continue;
    if (!seen[size_t(label)])
      fail(node.describe(), ": einsum output letter '", einsumLabelLetter(label),
           "' does not appear in any input");
    if (used[size_t(label)])
      fail(node.describe(), ": einsum output letter '", einsumLabelLetter(label), "' is repeated");
    used[size_t(label)] = true;
  }
  return expandEllipsis(term, spec.numEllipsisDims, spec.numEllipsisDims);
}

void inferEinsum(Node &node, InferenceContext &context) {
  std::vector<size_t> operandIndices;
  for (size_t i = 0; i < node.numOperands(); ++i)
    operandIndices.push_back(i);
  DType dtype = commonOperandDType(node, operandIndices);
  requireNumericDType(node, dtype);
  std::vector<size_t> ranks;
  for (size_t i = 0; i < node.numOperands(); ++i) {
    const Value *v = node.operand(i);
    if (!v)
      fail(node.describe(), ": einsum operand ", i, " is missing");
    if (!v->shape().isRanked())
      return setAllResultsUnranked(node, dtype);
    ranks.push_back(v->shape().rank());
  }
  const Attribute *equation = node.findAttr("equation");
  if (!equation || equation->kind() != Attribute::Kind::String)
    fail(node.describe(), ": einsum needs a string attribute 'equation'");
  EinsumSpec spec = parseEinsumEquation(node, equation->asString(), ranks);

  // Letters must agree exactly; ellipsis axes broadcast.
  std::vector<Dim> labelDims(size_t(spec.numLabels()), Dim(1));
  std::vector<int> labelOwner(size_t(spec.numLabels()), -1);
  for (size_t op = 0; op < ranks.size(); ++op) {
    const Shape &shape = node.operand(op)->shape();
    for (size_t axis = 0; axis < ranks[op]; ++axis) {
      int label = spec.inputLabels[op][axis];
      Dim &known = labelDims[size_t(label)];
      int &owner = labelOwner[size_t(label)];
      if (owner < 0) {
        known = shape[axis];
      } else if (label < EinsumSpec::kFirstEllipsisLabel) {
        const Shape &ownerShape = node.operand(size_t(owner))->shape();
        requireSameDim(context, node, known, shape[axis],
                       "einsum dimension of '" + einsumLabelName(label) + "'", ownerShape, shape);
      } else {
        known = broadcastDims(context, node, known, shape[axis],
                              node.operand(size_t(owner))->shape(), shape);
      }
      owner = int(op);
    }
  }
  std::vector<Dim> dims;
  for (int label : spec.outputLabels)
    dims.push_back(labelDims[size_t(label)]);
  node.result(0)->setType({dtype, Shape(std::move(dims))});
}

} // namespace

Shape matMulResultShape(InferenceContext &context, const Node &node, const Shape &a,
                        const Shape &b) {
  if (a.rank() == 0 || b.rank() == 0)
    fail(node.describe(), ": matmul operands must have rank >= 1, got ", a.str(), " and ", b.str());
  const Dim &kA = a.dims().back();
  const Dim &kB = b.rank() == 1 ? b[0] : b[b.rank() - 2];
  requireSameDim(context, node, kA, kB, "matmul contraction dimension", a, b);

  // Batch dims (all but the last two) broadcast right-aligned.
  size_t batchA = a.rank() > 2 ? a.rank() - 2 : 0;
  size_t batchB = b.rank() > 2 ? b.rank() - 2 : 0;
  size_t batchRank = std::max(batchA, batchB);
  std::vector<Dim> dims;
  for (size_t i = 0; i < batchRank; ++i) {
    Dim da = i + batchA >= batchRank ? a[i + batchA - batchRank] : Dim(1);
    Dim db = i + batchB >= batchRank ? b[i + batchB - batchRank] : Dim(1);
    dims.push_back(broadcastDims(context, node, da, db, a, b));
  }
  if (a.rank() >= 2)
    dims.push_back(a[a.rank() - 2]);
  if (b.rank() >= 2)
    dims.push_back(b.dims().back());
  return Shape(std::move(dims));
}

std::string einsumLabelName(int label) {
  if (label < EinsumSpec::kFirstEllipsisLabel)
    return std::string(1, einsumLabelLetter(label));
  return "...#" + std::to_string(label - EinsumSpec::kFirstEllipsisLabel);
}

EinsumSpec parseEinsumEquation(const Node &node, const std::string &equation,
                               const std::vector<size_t> &ranks) {
  std::string text;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c)))
      text += c;
  size_t arrow = text.find("->");
  std::string lhs = text.substr(0, arrow);
  if (arrow != std::string::npos && text.find("->", arrow + 2) != std::string::npos)
    fail(node.describe(), ": einsum equation '", equation, "' has more than one '->'");

  std::vector<std::vector<int>> terms;
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parseEinsumTerm(node, lhs.substr(start, comma - start)));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    fail(node.describe(), ": einsum equation '", equation, "' has ", terms.size(),
         " input terms for ", ranks.size(), " operands");

  EinsumSpec spec;
  std::vector<int> ellipsisCounts;
  for (size_t op = 0; op < terms.size(); ++op) {
    bool hasEllipsis =
        std::find(terms[op].begin(), terms[op].end(), kEllipsisMarker) != terms[op].end();
    int letters = int(terms[op].size()) - (hasEllipsis ? 1 : 0);
    int rank = int(ranks[op]);
    if (hasEllipsis ? rank < letters : rank != letters)
      fail(node.describe(), ": einsum term ", op, " of '", equation, "' has ", letters,
           " letters for an operand of rank ", rank);
    ellipsisCounts.push_back(hasEllipsis ? rank - letters : 0);
    spec.numEllipsisDims = std::max(spec.numEllipsisDims, ellipsisCounts.back());
  }
  for (size_t op = 0; op < terms.size(); ++op)
    spec.inputLabels.push_back(expandEllipsis(terms[op], ellipsisCounts[op], spec.numEllipsisDims));
  spec.outputLabels = arrow == std::string::npos
                          ? implicitEinsumOutput(spec)
                          : explicitEinsumOutput(node, spec, text.substr(arrow + 2));
  return spec;
}

void registerLinearAlgebraShapeRules(ShapeRuleTable &table) {
  registerMatMulFamilyShapeRules(table);
  registerAttentionShapeRules(table);
  registerAdditiveAttentionShapeRules(table);
  registerLinearAttentionShapeRules(table);
  registerConvolutionShapeRules(table);
  registerRecurrentShapeRules(table);
  registerQuantizedGemmShapeRules(table);
  registerBlockQuantizedMatMulShapeRules(table);
}

void registerMatMulFamilyShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::MatMul, inferMatMul);
  table.add(OpKind::Gemm, inferGemm);
  table.add(OpKind::Einsum, inferEinsum);
}

} // namespace onnxc
