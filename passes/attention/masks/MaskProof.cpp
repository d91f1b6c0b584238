//===- passes/attention/masks/MaskProof.cpp - The band a symbolic mask hides ---===//
#include "passes/attention/masks/MaskProof.h"

#include "passes/attention/masks/MaskDistance.h"

#include <cmath>
#include <functional>
#include <unordered_map>

namespace onnxc::mask {

namespace {

/// Additive values at or below this hide a score completely in f32: exp of
/// the difference to any visible score underflows to 0.
constexpr double kHidingValue = -1e4;

/// Step 1: the mask's element over i (query), j (key) and the leading axes
/// that are not unit. With more keys than queries (a KV cache: the queries
/// are the last qSeq of kvSeq positions), i is the query's position among
/// the keys, so the mask's query row i - (kvSeq - qSeq) is bound to it.
ExprPtr bindAxes(const SymbolicTensor &mask, const Dim &qSeq, const Dim &kvSeq) {
  size_t rank = mask.dims.size();
  Affine row = Affine::variable(kQueryVariable);
  row.offset = subtractDims(qSeq, kvSeq);
  std::vector<Affine> replacement;
  for (size_t k = 0; k < rank; ++k) {
    const Dim &dim = mask.dims[k];
    bool key = k + 1 == rank, query = k + 2 == rank;
    if (isUnit(dim)) {
      // A unit query axis is the same row for every query; a unit key axis
      // the same column for every key.
      replacement.push_back(Affine::constant(0));
    } else if (key || query) {
      const Dim &length = key ? kvSeq : qSeq;
      if (dim != length)
        notProvable(std::string("the mask's ") + (key ? "key" : "query") + " axis has " +
                    dim.str() + " entries, not the " + (key ? "key" : "query") + " length " +
                    length.str());
      replacement.push_back(key ? Affine::variable(kKeyVariable) : row);
    } else {
      replacement.push_back(Affine::variable(kFirstLeadingVariable + int(k)));
    }
  }
  return substitute(mask.element, replacement);
}

void requireDistanceForm(const Affine &form) {
  for (const auto &[index, coefficient] : form.coefficients)
    if (index >= kFirstLeadingVariable)
      notProvable("the mask varies over batch or heads");
  if (form.coefficient(kQueryVariable) != -form.coefficient(kKeyVariable))
    notProvable("the mask depends on the query and key positions, not only on their distance");
  if (!form.offset.isConstant())
    notProvable("the mask depends on the sequence length");
}

double tableValue(const Tensor &table, int64_t flat) {
  if (!isMaskInteger(table.dtype()))
    return table.elementAsDouble(flat);
  int64_t v = table.elementAsInt64(flat);
  if (v > (int64_t(1) << 53) || v < -(int64_t(1) << 53))
    notProvable("a stored table holds integers too large to tabulate");
  return double(v);
}

bool sameValue(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

/// Where a stored table is read: fixed indices, and the axes read at i + a
/// and at j + b (-1 when absent).
struct TableAccess {
  std::vector<int64_t> fixed;
  int queryAxis = -1, keyAxis = -1;
  int64_t queryOffset = 0, keyOffset = 0;
};

TableAccess accessOf(const Expr &read) {
  TableAccess access;
  access.fixed.assign(read.indices.size(), 0);
  for (size_t k = 0; k < read.indices.size(); ++k) {
    const Affine &index = read.indices[k];
    for (const auto &[variable, coefficient] : index.coefficients)
      if (variable >= kFirstLeadingVariable)
        notProvable("the mask varies over batch or heads");
    std::optional<int64_t> offset = index.offset.constant();
    if (!offset)
      notProvable("the mask depends on the sequence length");
    int64_t size = read.table.dims()[k];
    if (!index.hasVariables()) {
      if (*offset < 0 || *offset >= size)
        notProvable("a stored table is read out of its bounds");
      access.fixed[k] = *offset;
      continue;
    }
    bool query = index.coefficients == std::map<int, int64_t>{{kQueryVariable, 1}};
    bool key = index.coefficients == std::map<int, int64_t>{{kKeyVariable, 1}};
    int &axis = query ? access.queryAxis : access.keyAxis;
    if ((!query && !key) || axis >= 0)
      notProvable("a stored table is read at positions other than i or j plus a constant");
    if (*offset < 0 || *offset >= size)
      notProvable("the mask reads past a stored table at every length");
    axis = int(k);
    (query ? access.queryOffset : access.keyOffset) = *offset;
  }
  return access;
}

/// Step 2 for a table: its values as a function of d = i - j, over every
/// (i, j) the table covers (further out, the original graph fails).
ExprPtr tabulate(const Expr &read) {
  const Tensor &table = read.table;
  TableAccess access = accessOf(read);
  std::vector<int64_t> strides(table.rank(), 1);
  for (size_t k = table.rank(); k-- > 1;)
    strides[k - 1] = strides[k] * table.dims()[k];
  int64_t base = 0;
  for (size_t k = 0; k < table.rank(); ++k)
    base += access.fixed[k] * strides[k];
  auto flatAt = [&](int axis, int64_t position) {
    return axis < 0 ? 0 : (position - access.fixed[size_t(axis)]) * strides[size_t(axis)];
  };
  if (access.queryAxis < 0 || access.keyAxis < 0) {
    // Read along one position only: a function of d just when uniform.
    int axis = access.queryAxis >= 0 ? access.queryAxis : access.keyAxis;
    int64_t offset = access.queryAxis >= 0 ? access.queryOffset : access.keyOffset;
    double first = tableValue(table, base + flatAt(axis, offset));
    for (int64_t p = offset + 1; p < table.dims()[size_t(axis)]; ++p)
      if (!sameValue(tableValue(table, base + flatAt(axis, p)), first))
        notProvable("the mask depends on the query and key positions, not only on their distance");
    return isMaskInteger(table.dtype()) ? integer(table.dtype(), Affine::constant(int64_t(first)))
                                        : constant(table.dtype(), first);
  }
  int64_t rows = table.dims()[size_t(access.queryAxis)];
  int64_t columns = table.dims()[size_t(access.keyAxis)];
  int64_t lowest = -(columns - 1 - access.keyOffset), highest = rows - 1 - access.queryOffset;
  std::vector<double> values(size_t(highest - lowest + 1), 0.0);
  std::vector<bool> seen(values.size(), false);
  for (int64_t p = access.queryOffset; p < rows; ++p)
    for (int64_t q = access.keyOffset; q < columns; ++q) {
      int64_t d = (p - access.queryOffset) - (q - access.keyOffset);
      size_t slot = size_t(d - lowest);
      double v = tableValue(table, base + flatAt(access.queryAxis, p) + flatAt(access.keyAxis, q));
      if (!seen[slot]) {
        seen[slot] = true;
        values[slot] = v;
      } else if (!sameValue(values[slot], v)) {
        notProvable("a stored mask table is not a function of i - j");
      }
    }
  return series(table.dtype(), std::move(values), lowest);
}

/// Whether an integer leaf over i and j (each in [0, 2^31)) fits `dtype`.
void requirePositionRange(const Affine &form, DType dtype) {
  for (const auto &[index, coefficient] : form.coefficients)
    if (index >= kFirstLeadingVariable)
      notProvable("the mask varies over batch or heads");
  std::optional<int64_t> offset = form.offset.constant();
  if (!offset)
    notProvable("the mask depends on the sequence length");
  __int128 low = *offset, high = *offset;
  for (const auto &[index, coefficient] : form.coefficients)
    (coefficient < 0 ? low : high) += __int128(coefficient) * kMaxDistance;
  if (low < minOf(dtype) || high > maxOf(dtype))
    notProvable("the mask's integer arithmetic may overflow its type");
}

/// A comparison of two position forms (j > i, j <= i + 5) as a comparison
/// of their exact difference with 0: the same truth, once both forms are
/// known to hold their values exactly.
ExprPtr comparedDifference(const Expr &comparison) {
  const ExprPtr &a = comparison.operands[0], &b = comparison.operands[1];
  requirePositionRange(a->affine, a->dtype);
  requirePositionRange(b->affine, b->dtype);
  return binary(comparison.kind, integer(DType::I64, a->affine - b->affine),
                integer(DType::I64, Affine::constant(0)));
}

bool comparesPositions(const Expr &e) {
  return (e.kind == ExprKind::Less || e.kind == ExprKind::LessOrEqual ||
          e.kind == ExprKind::Equal) &&
         e.operands[0]->kind == ExprKind::Affine && e.operands[1]->kind == ExprKind::Affine &&
         e.operands[1]->affine.constantValue() != int64_t(0);
}

/// Step 2: checks every leaf and replaces tables by series in d.
ExprPtr distanceForm(const ExprPtr &root) {
  std::unordered_map<const Expr *, ExprPtr> done;
  std::function<ExprPtr(const ExprPtr &)> visit = [&](const ExprPtr &e) -> ExprPtr {
    auto found = done.find(e.get());
    if (found != done.end())
      return found->second;
    ExprPtr r = e;
    if (comparesPositions(*e)) {
      r = visit(comparedDifference(*e));
    } else if (e->kind == ExprKind::Affine) {
      requireDistanceForm(e->affine);
    } else if (e->kind == ExprKind::Lookup) {
      r = tabulate(*e);
    } else if (!e->operands.empty()) {
      std::vector<ExprPtr> operands;
      bool changed = false;
      for (const ExprPtr &operand : e->operands) {
        operands.push_back(visit(operand));
        changed |= operands.back() != operand;
      }
      if (changed) {
        auto copy = std::make_shared<Expr>(*e);
        copy->operands = std::move(operands);
        r = copy;
      }
    }
    done[e.get()] = r;
    return r;
  };
  return visit(root);
}

enum class Visibility { Visible, Hidden, Undefined, Neither };

Visibility classify(const DistanceValue &v, MaskEncoding encoding) {
  if (!v.defined)
    return Visibility::Undefined;
  switch (encoding) {
  case MaskEncoding::Additive:
    if (v.number == 0.0)
      return Visibility::Visible;
    return v.number <= kHidingValue ? Visibility::Hidden : Visibility::Neither;
  case MaskEncoding::HiddenWhereTrue:
    return v.number != 0.0 ? Visibility::Hidden : Visibility::Visible;
  case MaskEncoding::HiddenWhereFalse:
    return v.number != 0.0 ? Visibility::Visible : Visibility::Hidden;
  }
  return Visibility::Neither;
}

/// How far visibility reaches from the diagonal along one side (`visible`
/// indexed by distance 0..horizon, the last entry standing for everything
/// beyond): a limit, or KeyBand::kUnbounded.
int64_t reach(const std::vector<Visibility> &side) {
  size_t d = 1;
  while (d < side.size() && side[d] == Visibility::Visible)
    ++d;
  if (d == side.size() || side[d] == Visibility::Undefined)
    return KeyBand::kUnbounded;
  for (size_t rest = d; rest < side.size(); ++rest)
    if (side[rest] == Visibility::Visible)
      notProvable("the mask is not a band around the diagonal");
  return int64_t(d - 1);
}

} // namespace

KeyBand proveBand(const SymbolicTensor &mask, MaskEncoding encoding, const Dim &seq) {
  return proveBand(mask, encoding, seq, seq);
}

KeyBand proveBand(const SymbolicTensor &mask, MaskEncoding encoding, const Dim &qSeq,
                  const Dim &kvSeq) {
  if (encoding == MaskEncoding::Additive ? !isFloat(mask.dtype) : mask.dtype != DType::Bool)
    notProvable("the mask's element type does not suit how it is applied");
  ExprPtr predicate = distanceForm(bindAxes(mask, qSeq, kvSeq));
  DistanceFunction function(predicate);
  int64_t horizon = function.horizon();
  std::vector<Visibility> below(size_t(horizon + 1)), above(size_t(horizon + 1));
  for (int64_t d = -horizon; d <= horizon; ++d) {
    Visibility v = classify(function.at(d), encoding);
    if (v == Visibility::Neither)
      notProvable("the mask has values that neither keep (0) nor hide (<= -1e4) a score");
    (d >= 0 ? below[size_t(d)] : above[size_t(-d)]) = v;
    if (d == 0)
      above[0] = v;
  }
  if (below[0] == Visibility::Undefined)
    notProvable("the mask is undefined on the diagonal");
  if (below[0] == Visibility::Hidden)
    notProvable("the mask hides the diagonal");
  return KeyBand{reach(below), reach(above)};
}

} // namespace onnxc::mask
