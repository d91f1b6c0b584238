//===- codegen/lower/quantization/QuantizedConvPlan.h - A Conv on the integer GEMM, planned -===//
//
// Internal to QuantizedConvLowering.cpp: the geometry, block size and packed
// weights of a Conv that runs as the integer GEMM over patches of its input.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/kernels/IntegerGemm.h"
#include "codegen/lower/LoweringContext.h"
#include "codegen/lower/quantization/QuantizedGemmSupport.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnxc::lower {

/// Stack budgets of a block's patch rows (bytes) and output tile (elements).
constexpr int64_t kMaxPatchBytes = 524288;
constexpr int64_t kMaxTileElements = 98304;
/// Rows per block, a multiple of both tile heights (4 and 6).
constexpr int64_t kMaxBlockRows = 96;
constexpr int64_t kRowQuantum = 12;

/// The node's operands by role.
struct QuantizedConvOperands {
  const onnxc::Value *x = nullptr, *weights = nullptr, *bias = nullptr, *result = nullptr;
  const onnxc::Value *xZero = nullptr, *wScale = nullptr, *wZero = nullptr;
};

/// A 1-D or 2-D Conv on the integer GEMM, as both steps emit it.
struct QuantizedConvPlan {
  const Node *node = nullptr;
  QuantizedConvOperands operands;
  ActivationBytes bytes;
  /// X's scale (f32 sources) and zero point (a constant, or read from
  /// `operands.xZero` at run time when `runtimeZero`).
  float scale = 1;
  int32_t zero = 0;
  bool runtimeZero = false;
  // Geometry, a 1-D Conv as H = 1.
  Dim batch, inH, inW, outH, outW, paddedH, paddedW;
  int64_t channels = 0, outChannels = 0, kH = 1, kW = 1;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1, padTop = 0, padLeft = 0;
  int64_t depth = 0, kPadded = 0, rowStride = 0, blockRows = 0;
  IntegerGemmSpec spec;
  PackedWeightBuffers packed;
  DType outputType = DType::F32;
};

/// Fills the plan's geometry; the empty string when the GEMM form applies,
/// else why it does not.
std::string planQuantizedConvGeometry(QuantizedConvPlan &plan);

/// The weights [M, C, kH, kW] as [M, K] rows in the patches' (kh, kw, c)
/// order, packed for the kernel (stored once per `key`).
void packQuantizedConvWeights(LoweringContext &ctx, QuantizedConvPlan &plan,
                              const std::vector<float> &scales, const std::vector<int32_t> &zeros,
                              const std::string &key);

} // namespace onnxc::lower
