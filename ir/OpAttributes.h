//===- ir/OpAttributes.h - Attribute checks shared by rules and kernels ---===//
//
// Where an op's shape rule (ir/infer/) and its reference kernel (ir/eval/)
// read the same attribute, they read it here, so that both accept the same
// nodes and reject the others with the same message.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Node.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnxc {

/// Normalizes a possibly negative axis or throws naming the node.
int64_t normalizeAxisOrFail(const Node &node, int64_t axis, int64_t rank,
                            const char *what = "axis");

/// Transpose's `perm` (the axes reversed when absent), checked to be a
/// permutation of `rank` axes.
std::vector<int64_t> transposePermutation(const Node &node, size_t rank);

/// Flatten's `axis` (default 1), normalized to [0, rank].
int64_t flattenAxis(const Node &node, int64_t rank);

/// Throws when Split's `num_outputs`, if given, is not the node's `parts`.
void checkSplitNumOutputs(const Node &node, size_t parts);

/// A per-spatial-dim attribute of Conv (kernel_shape, strides, dilations,
/// pads): `count` values, each `defaultValue` when absent and none below
/// `minimum`.
std::vector<int64_t> convSpatialAttr(const Node &node, const char *name, size_t count,
                                     int64_t defaultValue, int64_t minimum);

/// Conv's padding mode and explicit pads.
struct ConvPadding {
  std::string autoPad;       // NOTSET, VALID, SAME_UPPER or SAME_LOWER
  std::vector<int64_t> pads; // [begin..., end...]; zeros unless NOTSET
  /// SAME_*: the output size is ceil(input / stride), the pads follow from it.
  bool isSame() const { return autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER"; }
};

/// Reads Conv's `auto_pad` and, under NOTSET, `pads` for `spatialDims` dims.
ConvPadding convPadding(const Node &node, size_t spatialDims);

/// The functions LSTM, GRU and RNN accept in `activations`.
enum class RecurrentActivationKind {
  Relu,
  Tanh,
  Sigmoid,
  Affine,
  LeakyRelu,
  ThresholdedRelu,
  ScaledTanh,
  HardSigmoid,
  Elu,
  Softsign,
  Softplus,
};

struct RecurrentActivation {
  RecurrentActivationKind kind = RecurrentActivationKind::Tanh;
  double alpha = 0, beta = 0;
};

/// A recurrent node's activations, `perDirection` for each of `directions`:
/// `activations` (case-insensitive), `defaults` when absent, one direction's
/// list repeated for a bidirectional node. `activation_alpha` and
/// `activation_beta` are consumed in list order by the functions that take
/// them (as onnxruntime reads them); the others keep their defaults. Throws
/// naming the node for an unknown name or a list of the wrong length.
std::vector<RecurrentActivation> recurrentActivations(const Node &node, size_t perDirection,
                                                      int64_t directions,
                                                      const std::vector<std::string> &defaults);

} // namespace onnxc
