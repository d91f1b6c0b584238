//===- codegen/lower/convolution/ConvolutionLoweringInternal.h - Conv lowering pieces -===//
//
// Internal to the Conv lowerings: the shape every Conv is planned as, read
// once (ConvolutionLowering.cpp), and the two emitters that share it — the
// direct loop nest (any dtype, any shape) and the packed-GEMM form
// (ConvolutionGemmLowering.cpp: f32 with constant weights).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"
#include "ir/OpAttributes.h"

#include <vector>

namespace onnxc::lower {

/// A Conv node as both emitters see it (shapes checked like the evaluator's).
struct ConvShape {
  DType dtype = DType::F32;
  size_t spatialDims = 0;
  Dim batch, inChannels, outChannels;
  int64_t group = 1;
  std::vector<Dim> inSpatial, kernel, outSpatial;
  std::vector<int64_t> strides, dilations;
  ConvPadding padding;
};

/// Reads and checks `node`'s operands and attributes; throws through
/// ctx.unsupported for shapes no emitter handles.
ConvShape convShape(const LoweringContext &ctx, const Node &node);

/// The padding before each spatial dim, as i64 values in `f` (SAME pads
/// depend on the input size, which may be symbolic).
std::vector<llvm::Value *> convPadsBefore(FunctionBuilder &f, const ConvShape &c);

/// Product of dims[begin, end).
Dim dimProduct(const std::vector<Dim> &dims, size_t begin, size_t end);

/// output[column * ldOutput + row] = tile[row * columns + column] for rows
/// [0, count) and the tile's `columns` (a compile-time constant), elements
/// of `type`: 8 x 8 blocks through registers, scalar edges. Turns a GEMM's
/// [positions, channels] tile into NCHW.
void emitTileTranspose(KernelBuilder &k, DType type, llvm::Value *tile, int64_t columns,
                       llvm::Value *count, llvm::Value *output, llvm::Value *ldOutput);

/// Lowers `node` onto the packed GEMM when that applies (f32, AVX2+FMA,
/// constant weights, constant kernel and channel dims, not depthwise);
/// returns false, having emitted nothing, otherwise.
bool lowerConvOnGemm(LoweringContext &ctx, const Node &node, const ConvShape &c);

} // namespace onnxc::lower
