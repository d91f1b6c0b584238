//===- codegen/lower/elementwise/ElementwiseLayout.cpp - Index space of an elementwise kernel -===//

#include "codegen/lower/elementwise/ElementwiseLayout.h"

#include "ir/Error.h"

namespace onnxc::lower {

namespace {

enum class AxisClass { Full, Broadcast, Runtime };

/// One result axis, before merging: its extent and each operand's reading.
struct Axis {
  Dim extent;
  std::vector<AxisClass> classes;
  std::vector<LayoutStride> strides;
};

/// Row-major strides of `shape` as Dims.
std::vector<Dim> rowMajorStrides(const Shape &shape) {
  std::vector<Dim> strides(shape.rank(), Dim(1));
  Dim stride(1);
  for (size_t i = shape.rank(); i-- > 0;) {
    strides[i] = stride;
    stride = stride * shape[i];
  }
  return strides;
}

bool canMerge(const Axis &outer, const Axis &inner) {
  for (size_t o = 0; o < outer.classes.size(); ++o)
    if (outer.classes[o] != inner.classes[o] || outer.classes[o] == AxisClass::Runtime)
      return false;
  return true;
}

} // namespace

bool isSingleElementShape(const Shape &shape) {
  for (const Dim &d : shape.dims())
    if (d.constant() != std::optional<int64_t>(1))
      return false;
  return shape.isRanked();
}

IterationSpace planIterationSpace(const Shape &result, const std::vector<Shape> &operandShapes) {
  size_t rank = result.rank();
  size_t count = operandShapes.size();
  std::vector<std::vector<Dim>> ownStrides;
  for (const Shape &shape : operandShapes) {
    if (shape.rank() > rank && !isSingleElementShape(shape))
      fail("codegen: an operand of shape ", shape.str(), " does not broadcast to ", result.str());
    ownStrides.push_back(rowMajorStrides(shape));
  }

  std::vector<Axis> axes;
  for (size_t a = 0; a < rank; ++a) {
    if (result[a].constant() == std::optional<int64_t>(1))
      continue; // index 0 only: no operand needs a stride
    Axis axis{result[a], {}, {}};
    for (size_t o = 0; o < count; ++o) {
      const Shape &shape = operandShapes[o];
      size_t lead = rank - std::min(rank, shape.rank());
      if (isSingleElementShape(shape) || a < lead ||
          shape[a - lead].constant() == std::optional<int64_t>(1)) {
        axis.classes.push_back(AxisClass::Broadcast);
        axis.strides.push_back({Dim(0), std::nullopt});
      } else if (shape[a - lead].provablyEqual(result[a])) {
        axis.classes.push_back(AxisClass::Full);
        axis.strides.push_back({ownStrides[o][a - lead], std::nullopt});
      } else {
        axis.classes.push_back(AxisClass::Runtime);
        axis.strides.push_back({ownStrides[o][a - lead], shape[a - lead]});
      }
    }
    // Merge into the previous axis when every operand reads both alike:
    // the merged stride is the inner axis's.
    if (!axes.empty() && canMerge(axes.back(), axis)) {
      axes.back().extent = axes.back().extent * axis.extent;
      axes.back().strides = axis.strides;
    } else {
      axes.push_back(std::move(axis));
    }
  }
  if (axes.empty()) // a one-element result
    axes.push_back({Dim(1), std::vector<AxisClass>(count, AxisClass::Broadcast),
                    std::vector<LayoutStride>(count)});

  IterationSpace space;
  for (const Axis &axis : axes)
    space.extents.push_back(axis.extent);
  space.operands.resize(count);
  for (size_t o = 0; o < count; ++o) {
    OperandLayout &layout = space.operands[o];
    for (const Axis &axis : axes)
      layout.strides.push_back(axis.strides[o]);
    const Axis &inner = axes.back();
    if (inner.classes[o] == AxisClass::Broadcast)
      layout.inner = InnerAccess::Splat;
    else if (inner.classes[o] == AxisClass::Full && inner.strides[o].stride == Dim(1))
      layout.inner = InnerAccess::Contiguous;
    else
      layout.inner = InnerAccess::Strided;
  }
  return space;
}

} // namespace onnxc::lower
