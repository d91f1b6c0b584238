//===- ir/PoolingAttributes.cpp - Pool, ConvTranspose and Resize geometry -===//
#include "ir/PoolingAttributes.h"

#include "ir/Error.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace onnxc {

namespace {

/// floor(a / b) for b > 0 (C++ division truncates toward zero).
int64_t floorDiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0); }

bool flag(const Node &node, const char *name) {
  int64_t value = node.getInt(name, 0);
  if (value != 0 && value != 1)
    fail(node.describe(), ": attribute '", name, "' must be 0 or 1, got ", value);
  return value == 1;
}

} // namespace

PoolAttributes poolAttributes(const Node &node, size_t spatialDims) {
  if (!node.hasAttr("kernel_shape"))
    fail(node.describe(), ": ", node.opName(), " needs the attribute 'kernel_shape'");
  PoolAttributes a;
  a.kernel = convSpatialAttr(node, "kernel_shape", spatialDims, 1, 1);
  a.strides = convSpatialAttr(node, "strides", spatialDims, 1, 1);
  a.dilations = convSpatialAttr(node, "dilations", spatialDims, 1, 1);
  a.padding = convPadding(node, spatialDims);
  a.ceilMode = flag(node, "ceil_mode");
  a.countIncludePad = flag(node, "count_include_pad");
  return a;
}

WindowDim poolDim(const Node &node, const PoolAttributes &a, size_t i, int64_t in) {
  size_t n = a.kernel.size();
  int64_t stride = a.strides[i], extent = a.extent(i);
  if (a.padding.isSame()) {
    int64_t out = (in + stride - 1) / stride;
    int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - in);
    // SAME_UPPER puts the odd extra pad at the end, SAME_LOWER at the start.
    int64_t begin = a.padding.autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    return {out, begin};
  }
  int64_t begin = a.padding.pads[i], room = in + begin + a.padding.pads[n + i] - extent;
  if (room < 0)
    fail(node.describe(), ": pooling window extent ", extent, " exceeds padded input size ",
         room + extent, " in spatial dim ", i);
  int64_t out = (a.ceilMode ? (room + stride - 1) / stride : room / stride) + 1;
  // A last window that would start past the input and the leading pad is
  // dropped, as in torch and onnxruntime.
  if (a.ceilMode && (out - 1) * stride >= in + begin)
    --out;
  return {out, begin};
}

ConvTransposeAttributes convTransposeAttributes(const Node &node, std::vector<int64_t> kernel) {
  size_t n = kernel.size();
  ConvTransposeAttributes a;
  if (node.hasAttr("kernel_shape")) {
    std::vector<int64_t> attr = convSpatialAttr(node, "kernel_shape", n, 1, 1);
    for (size_t i = 0; i < n; ++i) {
      if (kernel[i] >= 0 && kernel[i] != attr[i])
        fail(node.describe(), ": kernel_shape does not match the weights' spatial dims");
      kernel[i] = attr[i];
    }
  }
  a.kernel = std::move(kernel);
  a.strides = convSpatialAttr(node, "strides", n, 1, 1);
  a.dilations = convSpatialAttr(node, "dilations", n, 1, 1);
  a.outputPadding = convSpatialAttr(node, "output_padding", n, 0, 0);
  for (size_t i = 0; i < n; ++i)
    if (a.outputPadding[i] >= std::max(a.strides[i], a.dilations[i]))
      fail(node.describe(), ": output_padding ", a.outputPadding[i],
           " must be smaller than the stride or the dilation in spatial dim ", i);
  if (node.hasAttr("output_shape")) {
    a.outputShape = node.getInts("output_shape");
    if (a.outputShape.size() == n + 2) // [N, C, spatial...] is accepted too
      a.outputShape.erase(a.outputShape.begin(), a.outputShape.begin() + 2);
    if (a.outputShape.size() != n)
      fail(node.describe(), ": attribute 'output_shape' has ", a.outputShape.size(),
           " values, expected ", n);
  }
  a.padding = convPadding(node, n);
  a.group = node.getInt("group", 1);
  if (a.group <= 0)
    fail(node.describe(), ": group must be positive, got ", a.group);
  return a;
}

WindowDim convTransposeDim(const Node &node, const ConvTransposeAttributes &a, size_t i,
                           int64_t in) {
  size_t n = a.kernel.size();
  int64_t full = a.strides[i] * (in - 1) + a.outputPadding[i] + a.extent(i);
  if (a.outputShape.empty() && !a.padding.isSame()) {
    int64_t out = full - a.padding.pads[i] - a.padding.pads[n + i];
    if (out <= 0)
      fail(node.describe(), ": convtranspose pads leave no output in spatial dim ", i);
    return {out, a.padding.pads[i]};
  }
  int64_t out = a.outputShape.empty() ? in * a.strides[i] : a.outputShape[i];
  if (out <= 0)
    fail(node.describe(), ": output_shape must be positive, got ", out);
  int64_t total = full - out;
  int64_t half = floorDiv(total, 2);
  return {out, a.padding.autoPad == "SAME_UPPER" ? half : total - half};
}

namespace {

template <typename Enum, size_t N>
Enum parseChoice(const Node &node, const char *name, const char *fallback,
                 const std::pair<const char *, Enum> (&choices)[N]) {
  std::string value = node.getString(name, fallback);
  for (const auto &[text, choice] : choices)
    if (value == text)
      return choice;
  fail(node.describe(), ": Resize ", name, " '", value, "' is not supported");
}

} // namespace

ResizeAttributes resizeAttributes(const Node &node) {
  ResizeAttributes a;
  a.antialias = flag(node, "antialias");
  a.mode = parseChoice<ResizeMode>(node, "mode", "nearest",
                                   {{"nearest", ResizeMode::Nearest},
                                    {"linear", ResizeMode::Linear},
                                    {"cubic", ResizeMode::Cubic}});
  a.coordinates = parseChoice<ResizeCoordinates>(
      node, "coordinate_transformation_mode", "half_pixel",
      {{"half_pixel", ResizeCoordinates::HalfPixel},
       {"half_pixel_symmetric", ResizeCoordinates::HalfPixelSymmetric},
       {"pytorch_half_pixel", ResizeCoordinates::PytorchHalfPixel},
       {"align_corners", ResizeCoordinates::AlignCorners},
       {"asymmetric", ResizeCoordinates::Asymmetric},
       {"tf_crop_and_resize", ResizeCoordinates::TfCropAndResize}});
  a.rounding =
      parseChoice<ResizeRounding>(node, "nearest_mode", "round_prefer_floor",
                                  {{"round_prefer_floor", ResizeRounding::RoundPreferFloor},
                                   {"round_prefer_ceil", ResizeRounding::RoundPreferCeil},
                                   {"floor", ResizeRounding::Floor},
                                   {"ceil", ResizeRounding::Ceil}});
  a.aspect = parseChoice<ResizeAspect>(node, "keep_aspect_ratio_policy", "stretch",
                                       {{"stretch", ResizeAspect::Stretch},
                                        {"not_larger", ResizeAspect::NotLarger},
                                        {"not_smaller", ResizeAspect::NotSmaller}});
  a.cubicA = node.getFloat("cubic_coeff_a", -0.75f);
  a.excludeOutside = flag(node, "exclude_outside");
  a.extrapolation = node.getFloat("extrapolation_value", 0.0f);
  a.axes = node.getInts("axes");
  return a;
}

std::vector<int64_t> resizeAxes(const Node &node, const ResizeAttributes &a, int64_t rank) {
  std::vector<int64_t> axes;
  if (a.axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  for (int64_t axis : a.axes) {
    int64_t normalized = normalizeAxisOrFail(node, axis, rank, "resize axis");
    if (std::find(axes.begin(), axes.end(), normalized) != axes.end())
      fail(node.describe(), ": resize axis ", axis, " is repeated");
    axes.push_back(normalized);
  }
  return axes;
}

int64_t resizedLength(const Node &node, double scale, int64_t in, bool round) {
  if (!(scale > 0) || !std::isfinite(scale))
    fail(node.describe(), ": Resize scale ", scale, " must be finite and positive");
  double length = scale * double(in) + (round ? 0.5 : 0.0);
  if (!(length < double(int64_t(1) << 40)))
    fail(node.describe(), ": Resize to ", length, " elements on one axis is too large");
  return int64_t(std::floor(length));
}

ResizeShape resizeShape(const Node &node, const ResizeAttributes &a,
                        const std::vector<int64_t> &inDims, const std::vector<float> *scales,
                        const std::vector<int64_t> *sizes) {
  int64_t rank = int64_t(inDims.size());
  std::vector<int64_t> axes = resizeAxes(node, a, rank);
  ResizeShape s{inDims, std::vector<double>(size_t(rank), 1.0)};
  const size_t given = scales ? scales->size() : sizes ? sizes->size() : 0;
  if ((scales && sizes) || (!scales && !sizes))
    fail(node.describe(), ": Resize needs exactly one of scales and sizes");
  if (given != axes.size())
    fail(node.describe(), ": Resize ", scales ? "scales" : "sizes", " has ", given, " values for ",
         axes.size(), " axes");
  if (scales) {
    if (a.aspect != ResizeAspect::Stretch)
      fail(node.describe(), ": keep_aspect_ratio_policy applies to sizes, not scales");
    for (size_t i = 0; i < axes.size(); ++i) {
      double scale = (*scales)[i];
      s.scales[size_t(axes[i])] = scale;
      s.outDims[size_t(axes[i])] = resizedLength(node, scale, inDims[size_t(axes[i])]);
    }
    return s;
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t in = inDims[size_t(axes[i])];
    if ((*sizes)[i] <= 0 || in <= 0)
      fail(node.describe(), ": Resize sizes must be positive, got ", (*sizes)[i]);
    s.scales[size_t(axes[i])] = double((*sizes)[i]) / double(in);
    s.outDims[size_t(axes[i])] = (*sizes)[i];
  }
  if (a.aspect == ResizeAspect::Stretch)
    return s;
  double scale = s.scales[size_t(axes[0])];
  for (int64_t axis : axes)
    scale = a.aspect == ResizeAspect::NotLarger ? std::min(scale, s.scales[size_t(axis)])
                                                : std::max(scale, s.scales[size_t(axis)]);
  for (int64_t axis : axes) {
    s.scales[size_t(axis)] = scale;
    s.outDims[size_t(axis)] = resizedLength(node, scale, inDims[size_t(axis)], true);
  }
  return s;
}

double resizeSourceCoordinate(const ResizeAttributes &a, double x, double scale, int64_t in,
                              int64_t out, double roiStart, double roiEnd) {
  // The spec measures the output by in * scale, which is not the integer
  // size when a scale was given; onnx's reference and onnxruntime agree.
  double width = scale * double(in);
  switch (a.coordinates) {
  case ResizeCoordinates::HalfPixel:
    return (x + 0.5) / scale - 0.5;
  case ResizeCoordinates::HalfPixelSymmetric: {
    double adjustment = double(out) / width;
    double offset = double(in) / 2 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  case ResizeCoordinates::PytorchHalfPixel:
    return out > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
  case ResizeCoordinates::AlignCorners:
    return out > 1 ? x * double(in - 1) / (width - 1) : 0.0;
  case ResizeCoordinates::Asymmetric:
    return x / scale;
  case ResizeCoordinates::TfCropAndResize:
    if (out > 1)
      return roiStart * double(in - 1) + x * (roiEnd - roiStart) * double(in - 1) / (width - 1);
    return roiStart * double(in - 1) + (roiEnd - roiStart) * double(in - 1) / 2;
  }
  return x;
}

double cubicWeight(double distance, double a) {
  double d = std::fabs(distance);
  if (d <= 1)
    return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2)
    return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

int resizeTapCount(const ResizeAttributes &a, double scale) {
  if (a.mode == ResizeMode::Nearest)
    return 1;
  double support = a.mode == ResizeMode::Linear ? 1 : 2;
  if (!a.antialias || scale >= 1)
    return int(2 * support);
  // The reference's footprint: taps from floor(-support / scale) + 1 to the mirror of it.
  int64_t start = int64_t(std::floor(-support / scale)) + 1;
  return int(2 - 2 * start);
}

ResizeTaps resizeTaps(const ResizeAttributes &a, double source, int64_t in, double scale) {
  ResizeTaps t;
  int count = resizeTapCount(a, scale);
  t.index.assign(size_t(count), 0);
  t.weight.assign(size_t(count), 0.0);
  if (a.coordinates == ResizeCoordinates::TfCropAndResize &&
      (source < 0 || source > double(in - 1))) {
    t.outside = true;
    return t;
  }
  double base = std::floor(source);
  double ratio = source - base;
  auto clampIndex = [&](double i) { return int64_t(std::clamp(i, 0.0, double(in - 1))); };
  if (a.mode == ResizeMode::Nearest) {
    bool up = false;
    switch (a.rounding) {
    case ResizeRounding::RoundPreferFloor:
      up = ratio > 0.5;
      break;
    case ResizeRounding::RoundPreferCeil:
      up = ratio >= 0.5;
      break;
    case ResizeRounding::Floor:
      break;
    case ResizeRounding::Ceil:
      up = ratio > 0;
      break;
    }
    t.index[0] = clampIndex(base + (up ? 1 : 0));
    t.weight[0] = 1;
    return t;
  }
  // The filter is stretched by 1 / scale when antialiasing a downscale.
  double stretch = a.antialias ? std::min(scale, 1.0) : 1.0;
  int first = resizeFirstTap(count);
  double sum = 0;
  for (int i = 0; i < count; ++i) {
    double distance = stretch * double(first + i - ratio);
    t.weight[size_t(i)] = a.mode == ResizeMode::Linear
                              ? std::clamp(1 - std::fabs(distance), 0.0, 1.0)
                              : cubicWeight(distance, a.cubicA);
    t.index[size_t(i)] = clampIndex(base + first + i);
    sum += t.weight[size_t(i)];
  }
  if (a.antialias && sum != 0)
    for (double &w : t.weight)
      w /= sum;
  if (a.excludeOutside) {
    sum = 0;
    for (int i = 0; i < count; ++i) {
      double position = base + first + i;
      if (position < 0 || position > double(in - 1))
        t.weight[size_t(i)] = 0;
      sum += t.weight[size_t(i)];
    }
    if (sum != 0)
      for (double &w : t.weight)
        w /= sum;
  }
  return t;
}

} // namespace onnxc
