//===- codegen/lower/movement/MovementLoweringInternal.h - Movement op lowerings -===//
//
// The lowerings registered by registerMovementLowerings, one family per file:
// views, Concat, Split, Expand, Tile (MovementLowering.cpp), Transpose
// (TransposeLowering.cpp), Slice (SliceLowering.cpp), Gather and Trilu
// (GatherLowering.cpp), and the creation ops (CreationLowering.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"

namespace onnxc::lower {

void lowerTranspose(LoweringContext &context, const Node &node);
void lowerSlice(LoweringContext &context, const Node &node);
void lowerGather(LoweringContext &context, const Node &node);
void lowerTrilu(LoweringContext &context, const Node &node);
void lowerShape(LoweringContext &context, const Node &node);
void lowerSize(LoweringContext &context, const Node &node);
void lowerRange(LoweringContext &context, const Node &node);
void lowerConstantOfShape(LoweringContext &context, const Node &node);
void lowerConstant(LoweringContext &context, const Node &node);
/// TensorScatter (TensorScatterLowering.cpp), registered with ScatterND.
void lowerTensorScatter(LoweringContext &context, const Node &node);

/// Whether `value` is read by any node or is a graph output.
bool isNeeded(const LoweringContext &context, const Value *value);

} // namespace onnxc::lower
