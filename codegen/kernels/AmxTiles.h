//===- codegen/kernels/AmxTiles.h - The AMX tile configuration the kernels share -===//
//
// The bf16 GEMM (Bf16Gemm.h) and the integer GEMM's AMX-INT8 tiles
// (IntegerGemm.h) use one tile layout: palette 1, tiles 0-3 the C block
// (2 x 2 tiles of 16 rows x 64 bytes), 4-5 the A rows, 6-7 the B rows, each
// 16 rows of 64 bytes. The process must hold the AMX tile state (the runtime
// asks for it: runtime/CpuFeatures.h) before the first tile instruction.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/IR/IRBuilder.h"

namespace onnxc {

/// Fills the 64-byte `config` (a stack buffer, 64-byte aligned) with that
/// layout and loads it (LDTILECFG, which also zeroes every tile).
void emitAmxTileConfig(llvm::IRBuilderBase &builder, llvm::Value *config);

} // namespace onnxc
