//===- passes/attention/masks/MaskSymbolicMovement.cpp - Symbolic evaluation: movement ops ==//
//
// Ops that move elements: each result element reads the operand at an index
// that is an affine form of the result's indices, so the rule is a
// substitution of the operand's variables (plus new dims).
//
//===----------------------------------------------------------------------===//
#include "passes/attention/masks/MaskSymbolic.h"

#include "ir/infer/KnownContents.h"

#include <algorithm>

namespace onnxc::mask {

namespace {

/// Ends at or beyond this mean "to the end" (torch writes INT64_MAX).
constexpr int64_t kToTheEnd = 2147483647;

int64_t normalizedAxis(int64_t axis, size_t rank, const char *what) {
  std::optional<int64_t> a = normalizeAxis(axis, int64_t(rank));
  if (!a)
    notProvable(std::string(what) + " axis is out of range");
  return *a;
}

/// The operand's element read through `replacement` of its variables.
SymbolicTensor moved(const SymbolicTensor &in, std::vector<Dim> dims,
                     const std::vector<Affine> &replacement) {
  return SymbolicTensor{in.dtype, std::move(dims), substitute(in.element, replacement),
                        in.assumesInTable};
}

/// One sliced axis: the result length, and the operand index it reads at
/// result index x (start + step * x).
struct AxisSlice {
  Dim length;
  int64_t start = 0, step = 1;
  bool assumesInTable = false;
  Dim shapeStart = Dim(int64_t(0)); // a start computed from shapes, added to `start`
};

/// Rows [start, end) of a stored table, both bounds computed from shapes (a
/// causal table read after a KV cache: rows past .. past+seq). Shape
/// inference's Slice rule made 0 <= start <= end <= the table's length
/// assumptions the runtime checks before anything runs, so no clamp applies.
AxisSlice sliceTableFromShapes(const Dim &start, const Dim &end, int64_t step) {
  if (step != 1)
    notProvable("a strided Slice from a start that depends on shapes");
  if (end.isConstant() || !provablyNonNegative(start))
    notProvable("a Slice start that depends on shapes");
  AxisSlice slice;
  slice.length = subtractDims(end, start);
  if (!provablyNonNegative(slice.length))
    notProvable("a Slice whose length may be negative");
  slice.shapeStart = start;
  slice.assumesInTable = true;
  return slice;
}

AxisSlice sliceAxis(const Dim &dim, const Dim &start, const Dim &end, int64_t step) {
  std::optional<int64_t> d = dim.constant(), s = start.constant(), e = end.constant();
  if (d && s && e) {
    SliceBounds b = resolveSliceBounds(*s, *e, step, *d);
    return {Dim(b.length), b.start, b.step, false};
  }
  if (!s && d && !start.isUnknown() && !end.isUnknown())
    return sliceTableFromShapes(start, end, step);
  if (step != 1)
    notProvable("a strided Slice of a symbolic dimension");
  if (!s)
    notProvable("a Slice start that depends on shapes");
  int64_t first = *s;
  if (first < 0 && !d)
    notProvable("a Slice from the end of a symbolic dimension");
  if (first < 0)
    first = std::max<int64_t>(0, first + *d);
  if (d)
    first = std::min(first, *d);
  else if (first > 0)
    notProvable("a Slice start past the beginning of a symbolic dimension");
  AxisSlice slice;
  slice.start = first;
  Dim last;
  if (e) {
    if (*e < kToTheEnd)
      notProvable("a Slice of a symbolic dimension to a constant end");
    last = dim;
  } else {
    if (!provablyNonNegative(end))
      notProvable("a Slice end that may be negative");
    if (d) {
      // Cut to a symbolic length from a constant one (a stored table):
      // exact while it fits; past the table the runtime result is shorter
      // than `end` and at least 2 long, and cannot broadcast.
      if (*d - first < 2)
        notProvable("a Slice of a dimension shorter than 2 to a symbolic end");
      slice.assumesInTable = true;
    } else if (!provablyNonNegative(subtractDims(dim, end))) {
      notProvable("a Slice end that may pass a symbolic dimension");
    }
    last = end;
  }
  slice.length = subtractDims(last, Dim(first));
  if (!provablyNonNegative(slice.length))
    notProvable("a Slice whose length may be negative");
  return slice;
}

SymbolicTensor slice(const SymbolicOperands &in) {
  const SymbolicTensor &data = *in[0];
  std::vector<Dim> starts = SymbolicEvaluator::contents(*in[1]);
  std::vector<Dim> ends = SymbolicEvaluator::contents(*in[2]);
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (in.size() > 3 && in[3])
    axes = constantContents(*in[3], "a Slice axis");
  else
    for (size_t k = 0; k < starts.size(); ++k)
      axes.push_back(int64_t(k));
  if (in.size() > 4 && in[4])
    steps = constantContents(*in[4], "a Slice step");
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    notProvable("Slice operands of different lengths");
  std::vector<Dim> dims = data.dims;
  std::vector<Affine> replacement;
  for (size_t k = 0; k < dims.size(); ++k)
    replacement.push_back(Affine::variable(int(k)));
  bool assumes = data.assumesInTable;
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = normalizedAxis(axes[i], dims.size(), "a Slice");
    if (seen[size_t(axis)] || steps[i] == 0)
      notProvable("a Slice repeats an axis or has step 0");
    seen[size_t(axis)] = true;
    AxisSlice s = sliceAxis(dims[size_t(axis)], starts[i], ends[i], steps[i]);
    dims[size_t(axis)] = s.length;
    replacement[size_t(axis)] =
        Affine::constant(s.start) + scaled(Affine::variable(int(axis)), s.step);
    replacement[size_t(axis)].offset = addDims(replacement[size_t(axis)].offset, s.shapeStart);
    assumes |= s.assumesInTable;
  }
  SymbolicTensor t = moved(data, dims, replacement);
  t.assumesInTable = assumes;
  return t;
}

SymbolicTensor gather(const Node &node, const SymbolicOperands &in) {
  const SymbolicTensor &data = *in[0];
  if (data.assumesInTable)
    notProvable("a Gather from a table slice");
  int64_t axis = normalizedAxis(node.getInt("axis", 0), data.dims.size(), "a Gather");
  std::optional<int64_t> size = data.dims[size_t(axis)].constant();
  if (!size)
    notProvable("a Gather along a symbolic dimension");
  std::vector<int64_t> indices = constantContents(*in[1], "a Gather index");
  for (int64_t &index : indices) {
    if (index < -*size || index >= *size)
      notProvable("a Gather index is out of range");
    if (index < 0)
      index += *size;
  }
  bool scalarIndex = in[1]->dims.empty();
  if (!scalarIndex && in[1]->dims.size() != 1)
    notProvable("a Gather with indices of rank above 1");
  // The gathered positions as a + s * x: a progression, or one index.
  int64_t step = indices.size() > 1 ? indices[1] - indices[0] : 0;
  for (size_t k = 0; k < indices.size(); ++k)
    if (indices[k] != indices[0] + int64_t(k) * step)
      notProvable("Gather indices that are not evenly spaced");
  std::vector<Dim> dims;
  std::vector<Affine> replacement;
  for (size_t k = 0; k < data.dims.size(); ++k) {
    int out = int(dims.size());
    if (int64_t(k) == axis) {
      if (indices.empty())
        notProvable("a Gather of no elements");
      replacement.push_back(scalarIndex ? Affine::constant(indices[0])
                                        : Affine::constant(indices[0]) +
                                              scaled(Affine::variable(out), step));
      if (!scalarIndex)
        dims.emplace_back(int64_t(indices.size()));
    } else {
      replacement.push_back(Affine::variable(out));
      dims.push_back(data.dims[k]);
    }
  }
  return moved(data, dims, replacement);
}

SymbolicTensor concat(const Node &node, const SymbolicOperands &in) {
  size_t rank = in[0]->dims.size();
  int64_t axis = normalizedAxis(node.getInt("axis", 0), rank, "a Concat");
  std::vector<Dim> dims = in[0]->dims;
  std::vector<Dim> offsets; // where each operand starts along the axis
  Dim total(0);
  for (const SymbolicTensor *part : in) {
    if (!part || part->dims.size() != rank)
      notProvable("Concat operands of different ranks");
    for (size_t k = 0; k < rank; ++k)
      if (int64_t(k) != axis && part->dims[k] != dims[k])
        notProvable("Concat operands whose other dims may differ");
    offsets.push_back(total);
    total = addDims(total, part->dims[size_t(axis)]);
  }
  dims[size_t(axis)] = total;
  SymbolicTensor t{in[0]->dtype, dims, nullptr, false};
  ExprPtr position = integer(DType::I64, Affine::variable(int(axis)));
  for (size_t m = in.size(); m-- > 0;) {
    std::vector<Affine> replacement;
    for (size_t k = 0; k < rank; ++k)
      replacement.push_back(int64_t(k) == axis
                                ? Affine::variable(int(k)) - Affine::ofDim(offsets[m])
                                : Affine::variable(int(k)));
    ExprPtr part = substitute(in[m]->element, replacement);
    t.assumesInTable |= in[m]->assumesInTable;
    if (!t.element) {
      t.element = part;
      continue;
    }
    ExprPtr before =
        binary(ExprKind::Less, position, integer(DType::I64, Affine::ofDim(offsets[m + 1])));
    t.element = select(before, part, t.element);
  }
  return t;
}

SymbolicTensor unsqueeze(const SymbolicOperands &in) {
  const SymbolicTensor &data = *in[0];
  std::vector<int64_t> axes = constantContents(*in[1], "an Unsqueeze axis");
  size_t rank = data.dims.size() + axes.size();
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    int64_t axis = normalizedAxis(a, rank, "an Unsqueeze");
    if (inserted[size_t(axis)])
      notProvable("an Unsqueeze repeats an axis");
    inserted[size_t(axis)] = true;
  }
  std::vector<Dim> dims;
  std::vector<Affine> replacement;
  for (size_t k = 0; k < rank; ++k) {
    if (inserted[k]) {
      dims.emplace_back(int64_t(1));
    } else {
      replacement.push_back(Affine::variable(int(k)));
      dims.push_back(data.dims[replacement.size() - 1]);
    }
  }
  return moved(data, dims, replacement);
}

SymbolicTensor squeeze(const SymbolicOperands &in) {
  const SymbolicTensor &data = *in[0];
  std::vector<bool> removed(data.dims.size(), false);
  if (in.size() > 1 && in[1]) {
    for (int64_t a : constantContents(*in[1], "a Squeeze axis")) {
      int64_t axis = normalizedAxis(a, data.dims.size(), "a Squeeze");
      if (!isUnit(data.dims[size_t(axis)]))
        notProvable("a Squeeze of an axis that may not be 1");
      removed[size_t(axis)] = true;
    }
  } else {
    for (size_t k = 0; k < data.dims.size(); ++k) {
      if (!data.dims[k].isConstant())
        notProvable("a Squeeze without axes of a symbolic shape");
      removed[k] = isUnit(data.dims[k]);
    }
  }
  std::vector<Dim> dims;
  std::vector<Affine> replacement;
  for (size_t k = 0; k < data.dims.size(); ++k) {
    replacement.push_back(removed[k] ? Affine::constant(0) : Affine::variable(int(dims.size())));
    if (!removed[k])
      dims.push_back(data.dims[k]);
  }
  return moved(data, dims, replacement);
}

/// A Reshape that only inserts or drops unit axes: the non-unit dims of
/// operand and result agree one to one, in order.
SymbolicTensor reshape(const Node &node, const SymbolicOperands &in) {
  const SymbolicTensor &data = *in[0];
  std::vector<Dim> target = SymbolicEvaluator::contents(*in[1]);
  bool allowZero = node.getInt("allowzero", 0) != 0;
  int inferred = -1;
  Dim known(1);
  for (size_t k = 0; k < target.size(); ++k) {
    std::optional<int64_t> c = target[k].constant();
    if (c == int64_t(0) && !allowZero) {
      if (k >= data.dims.size())
        notProvable("a Reshape copies a dim that does not exist");
      target[k] = data.dims[k];
    } else if (c == int64_t(-1)) {
      if (inferred >= 0)
        notProvable("a Reshape with two inferred dims");
      inferred = int(k);
      continue;
    } else if (!provablyNonNegative(target[k])) {
      notProvable("a Reshape to a dimension that may be negative");
    }
    known = multiplyDims(known, target[k]);
  }
  if (inferred >= 0) {
    if (data.assumesInTable)
      notProvable("a Reshape of a table slice infers a dim");
    Dim count(1);
    for (const Dim &d : data.dims)
      count = multiplyDims(count, d);
    std::optional<Dim> rest = count.divideExactly(known);
    if (!rest)
      notProvable("a Reshape whose inferred dim is not exact");
    target[size_t(inferred)] = *rest;
  }
  std::vector<size_t> inputAxes, outputAxes;
  for (size_t k = 0; k < data.dims.size(); ++k)
    if (!isUnit(data.dims[k]))
      inputAxes.push_back(k);
  for (size_t k = 0; k < target.size(); ++k)
    if (!isUnit(target[k]))
      outputAxes.push_back(k);
  if (inputAxes.size() != outputAxes.size())
    notProvable("a Reshape that regroups elements");
  std::vector<Affine> replacement(data.dims.size(), Affine::constant(0));
  for (size_t n = 0; n < inputAxes.size(); ++n) {
    if (data.dims[inputAxes[n]] != target[outputAxes[n]])
      notProvable("a Reshape that regroups elements");
    replacement[inputAxes[n]] = Affine::variable(int(outputAxes[n]));
  }
  return moved(data, target, replacement);
}

SymbolicTensor transpose(const Node &node, const SymbolicOperands &in) {
  const SymbolicTensor &data = *in[0];
  std::vector<int64_t> perm;
  if (node.hasAttr("perm"))
    perm = node.getInts("perm");
  else
    for (size_t k = data.dims.size(); k-- > 0;)
      perm.push_back(int64_t(k));
  if (perm.size() != data.dims.size())
    notProvable("a Transpose permutation of another rank");
  std::vector<Dim> dims(perm.size());
  std::vector<Affine> replacement(perm.size(), Affine::constant(0));
  std::vector<bool> used(perm.size(), false);
  for (size_t k = 0; k < perm.size(); ++k) {
    int64_t from = normalizedAxis(perm[k], perm.size(), "a Transpose");
    if (used[size_t(from)])
      notProvable("a Transpose permutation repeats an axis");
    used[size_t(from)] = true;
    dims[k] = data.dims[size_t(from)];
    replacement[size_t(from)] = Affine::variable(int(k));
  }
  return moved(data, dims, replacement);
}

SymbolicTensor expand(const SymbolicOperands &in) {
  const SymbolicTensor &data = *in[0];
  std::vector<Dim> target = SymbolicEvaluator::contents(*in[1]);
  for (const Dim &d : target)
    if (!provablyNonNegative(d))
      notProvable("an Expand to a dimension that may be negative");
  std::vector<Dim> dims = broadcastDims(data.dims, target);
  return SymbolicTensor{data.dtype, dims, alignedElement(data, dims), data.assumesInTable};
}

} // namespace

SymbolicTensor movementRule(const Node &node, const SymbolicOperands &in) {
  auto need = [&](size_t count) {
    for (size_t i = 0; i < count; ++i)
      if (i >= in.size() || !in[i])
        notProvable(std::string(node.opName()) + " misses an operand");
  };
  switch (node.kind()) {
  case OpKind::Slice:
    need(3);
    return slice(in);
  case OpKind::Gather:
    need(2);
    return gather(node, in);
  case OpKind::Concat:
    need(in.size());
    return concat(node, in);
  case OpKind::Unsqueeze:
    need(2);
    return unsqueeze(in);
  case OpKind::Squeeze:
    need(1);
    return squeeze(in);
  case OpKind::Reshape:
    need(2);
    return reshape(node, in);
  case OpKind::Transpose:
    need(1);
    return transpose(node, in);
  case OpKind::Expand:
    need(2);
    return expand(in);
  default:
    notProvable(std::string(node.opName()) + " is not followed in masks");
  }
}

} // namespace onnxc::mask
