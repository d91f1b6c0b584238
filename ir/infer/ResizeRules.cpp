//===- ir/infer/ResizeRules.cpp - Resize shape rule ------------------------===//
//
// Resize's output dims come from `sizes` (symbolic contents allowed, under
// the stretch policy) or from floor(in * scale), which is kept symbolic for
// a whole scale. An empty scales or sizes operand counts as absent, as the
// opset-13 form writes one of them as "".
//
//===----------------------------------------------------------------------===//
#include "ir/infer/MovementRulesInternal.h"

#include "ir/Error.h"
#include "ir/PoolingAttributes.h"
#include "ir/infer/KnownContents.h"

#include <cmath>

namespace onnxc {
namespace {

/// True when operand `i` is present and not statically empty.
bool givenOperand(const Node &node, size_t i) {
  const Value *v = node.operand(i);
  if (!v)
    return false;
  std::optional<int64_t> length = staticLength(v);
  return !(length && *length == 0);
}

void inferResize(Node &node, InferenceContext &context) {
  const Value *x = requireNamedOperand(node, 0, "X");
  ResizeAttributes a = resizeAttributes(node);
  DType dtype = x->dtype();
  bool scalesGiven = givenOperand(node, 2), sizesGiven = givenOperand(node, 3);
  if (scalesGiven == sizesGiven)
    fail(node.describe(), ": Resize needs exactly one of scales and sizes");
  if (!x->shape().isRanked())
    return setResult(node, 0, dtype, Shape());
  const Shape &in = x->shape();
  int64_t rank = int64_t(in.rank());
  std::vector<int64_t> axes = resizeAxes(node, a, rank);
  std::vector<Dim> dims = in.dims();
  if (sizesGiven) {
    std::optional<std::vector<Dim>> sizes = contentsOrUnknowns(context, node.operand(3));
    if (sizes && sizes->size() != axes.size())
      fail(node.describe(), ": Resize sizes has ", sizes->size(), " values for ", axes.size(),
           " axes");
    std::optional<std::vector<int64_t>> constantSizes = constantContents(context, node.operand(3));
    std::optional<std::vector<int64_t>> inDims = in.staticDims();
    if (constantSizes && inDims) {
      ResizeShape s = resizeShape(node, a, *inDims, nullptr, &*constantSizes);
      return setResult(node, 0, dtype, Shape::fromConstants(s.outDims));
    }
    for (size_t i = 0; i < axes.size(); ++i)
      dims[size_t(axes[i])] =
          sizes && a.aspect == ResizeAspect::Stretch ? (*sizes)[i] : Dim::unknown();
    return setResult(node, 0, dtype, Shape(std::move(dims)));
  }
  const Tensor *scalesTensor = constantTensorOf(node.operand(2));
  if (!scalesTensor || !isFloat(scalesTensor->dtype())) {
    for (int64_t axis : axes)
      dims[size_t(axis)] = Dim::unknown();
    return setResult(node, 0, dtype, Shape(std::move(dims)));
  }
  std::vector<float> scales;
  for (int64_t i = 0; i < scalesTensor->numElements(); ++i)
    scales.push_back(float(scalesTensor->elementAsDouble(i)));
  if (scales.size() != axes.size())
    fail(node.describe(), ": Resize scales has ", scales.size(), " values for ", axes.size(),
         " axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    Dim &d = dims[size_t(axes[i])];
    double scale = scales[i];
    resizedLength(node, scale, 1); // refuses a scale that is no scale
    if (std::optional<int64_t> c = d.constant())
      d = Dim(resizedLength(node, scale, *c));
    else if (scale == std::floor(scale) && !d.isUnknown())
      d = d * Dim(int64_t(scale));
    else
      d = Dim::unknown();
  }
  setResult(node, 0, dtype, Shape(std::move(dims)));
}

} // namespace

void registerResizeShapeRules(ShapeRuleTable &table) { table.add(OpKind::Resize, inferResize); }

} // namespace onnxc
