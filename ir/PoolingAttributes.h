//===- ir/PoolingAttributes.h - Pool, ConvTranspose and Resize geometry ---===//
//
// The attribute readings that the shape rules (ir/infer/), the reference
// kernels (ir/eval/) and the lowerings (codegen/lower/) of MaxPool,
// AveragePool, ConvTranspose and Resize share, so that all three accept the
// same nodes, refuse the others with the same line, and agree on every
// output size and pad.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Node.h"
#include "ir/OpAttributes.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace onnxc {

/// MaxPool / AveragePool attributes for `spatialDims` dims.
struct PoolAttributes {
  std::vector<int64_t> kernel, strides, dilations;
  ConvPadding padding;
  bool ceilMode = false;
  bool countIncludePad = false; // AveragePool only
  int64_t extent(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
};

/// Reads and checks the pooling attributes (kernel_shape is required).
PoolAttributes poolAttributes(const Node &node, size_t spatialDims);

/// One spatial dim of a pool or transposed convolution at a known size.
struct WindowDim {
  int64_t out = 0, padBegin = 0;
};

/// The output size and leading pad of spatial dim `i` for input size `in`;
/// throws naming the node when the window does not fit.
WindowDim poolDim(const Node &node, const PoolAttributes &a, size_t i, int64_t in);

/// ConvTranspose attributes for `spatialDims` dims; `kernel` from W.
struct ConvTransposeAttributes {
  std::vector<int64_t> kernel, strides, dilations, outputPadding;
  std::vector<int64_t> outputShape; // spatial dims; empty when absent
  ConvPadding padding;
  int64_t group = 1;
  int64_t extent(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
};

/// Reads and checks ConvTranspose's attributes; `kernel` holds W's spatial
/// dims, -1 where unknown (kernel_shape then fills them in).
ConvTransposeAttributes convTransposeAttributes(const Node &node, std::vector<int64_t> kernel);

/// The output size and leading pad (which may be negative when
/// output_shape asks for more than the full result) of spatial dim `i`.
WindowDim convTransposeDim(const Node &node, const ConvTransposeAttributes &a, size_t i,
                           int64_t in);

enum class ResizeMode { Nearest, Linear, Cubic };
enum class ResizeCoordinates {
  HalfPixel,
  HalfPixelSymmetric,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfCropAndResize
};
enum class ResizeRounding { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };
enum class ResizeAspect { Stretch, NotLarger, NotSmaller };

struct ResizeAttributes {
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoordinates coordinates = ResizeCoordinates::HalfPixel;
  ResizeRounding rounding = ResizeRounding::RoundPreferFloor;
  ResizeAspect aspect = ResizeAspect::Stretch;
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0.0;
  bool antialias = false;    // linear and cubic only: widen the filter to 1 / scale
  std::vector<int64_t> axes; // raw attribute; empty = every axis
};

/// Reads and checks Resize's attributes.
ResizeAttributes resizeAttributes(const Node &node);

/// `axes` normalized for `rank` (every axis when absent), checked distinct.
std::vector<int64_t> resizeAxes(const Node &node, const ResizeAttributes &a, int64_t rank);

/// floor(scale * in) (or the nearest integer when `round`), checked to be a
/// size: a scale that is not finite and positive, or a length past 2^40,
/// throws naming the node.
int64_t resizedLength(const Node &node, double scale, int64_t in, bool round = false);

/// Output dims and the per-axis scale used by the coordinate transform, from
/// known input dims and either `scales` (one per resized axis) or `sizes`.
struct ResizeShape {
  std::vector<int64_t> outDims;
  std::vector<double> scales;
};
ResizeShape resizeShape(const Node &node, const ResizeAttributes &a,
                        const std::vector<int64_t> &inDims, const std::vector<float> *scales,
                        const std::vector<int64_t> *sizes);

/// The source coordinate of output index `x` on an axis of `in` -> `out`
/// elements at `scale`; roiStart/roiEnd only for tf_crop_and_resize.
double resizeSourceCoordinate(const ResizeAttributes &a, double x, double scale, int64_t in,
                              int64_t out, double roiStart, double roiEnd);

/// Taps per output element on an axis resized by `scale`: 1 (nearest), 2
/// (linear), 4 (cubic), or under antialias a downscale's wider footprint.
int resizeTapCount(const ResizeAttributes &a, double scale);

/// The first tap's offset from floor(source) (the taps are consecutive).
inline int resizeFirstTap(int tapCount) { return tapCount == 1 ? 0 : 1 - tapCount / 2; }

/// The taps of one output coordinate: input indices (clamped to the axis)
/// and weights; `outside` is set for tf_crop_and_resize past the input.
struct ResizeTaps {
  std::vector<int64_t> index;
  std::vector<double> weight;
  bool outside = false;
};
ResizeTaps resizeTaps(const ResizeAttributes &a, double sourceCoordinate, int64_t in, double scale);

/// The cubic convolution weight of a tap `distance` away (|distance| < 2).
double cubicWeight(double distance, double a);

} // namespace onnxc
