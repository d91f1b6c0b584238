//===- codegen/lower/RecurrentActivations.h - LSTM/GRU/RNN activations -----===//
//
// The activation functions of the recurrent ops, read from the node's
// `activations`, `activation_alpha` and `activation_beta` exactly as
// ir/eval/RecurrentKernels.cpp reads them, and emitted on a scalar of the
// kernel's real type.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/FunctionBuilder.h"
#include "codegen/lower/LoweringContext.h"

#include <vector>

namespace onnxc::lower {

enum class ActivationKind {
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
  ActivationKind kind = ActivationKind::Tanh;
  double alpha = 0, beta = 0;
};

/// `perDirection` activations for each of `directions`; `defaults` are the
/// op's names when the attribute is absent. A list of one direction's
/// functions is repeated for a bidirectional node. Refuses unknown names
/// and a list of the wrong length.
std::vector<RecurrentActivation> readRecurrentActivations(const LoweringContext &ctx,
                                                          const Node &node, size_t perDirection,
                                                          int64_t directions,
                                                          const std::vector<std::string> &defaults);

/// activation(x) for a float or double x.
llvm::Value *emitActivation(FunctionBuilder &f, const RecurrentActivation &activation,
                            llvm::Value *x);

} // namespace onnxc::lower
