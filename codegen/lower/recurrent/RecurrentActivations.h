//===- codegen/lower/recurrent/RecurrentActivations.h - LSTM/GRU/RNN activations -===//
//
// The activation functions of the recurrent ops (read from the node by
// ir/OpAttributes.h's recurrentActivations, as the reference does), emitted
// on a scalar of the kernel's real type.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/FunctionBuilder.h"
#include "ir/OpAttributes.h"

namespace onnxc::lower {

/// activation(x) for a float or double x.
llvm::Value *emitActivation(FunctionBuilder &f, const RecurrentActivation &activation,
                            llvm::Value *x);

} // namespace onnxc::lower
