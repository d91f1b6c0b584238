//===- codegen/kernels/AmxTiles.cpp - The AMX tile configuration -----------===//
#include "codegen/kernels/AmxTiles.h"

#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/Module.h"

namespace onnxc {

void emitAmxTileConfig(llvm::IRBuilderBase &builder, llvm::Value *config) {
  // Byte 0: the palette; bytes 16 + 2t: tile t's bytes per row; 48 + t: its rows.
  builder.CreateMemSet(config, builder.getInt8(0), 64, llvm::Align(64));
  builder.CreateStore(builder.getInt8(1), config);
  llvm::Type *byte = builder.getInt8Ty();
  for (int tile = 0; tile < 8; ++tile) {
    builder.CreateStore(builder.getInt16(64),
                        builder.CreateGEP(byte, config, builder.getInt64(16 + 2 * tile)));
    builder.CreateStore(builder.getInt8(16),
                        builder.CreateGEP(byte, config, builder.getInt64(48 + tile)));
  }
  llvm::Module *module = builder.GetInsertBlock()->getModule();
  builder.CreateCall(llvm::Intrinsic::getDeclaration(module, llvm::Intrinsic::x86_ldtilecfg),
                     {config});
}

} // namespace onnxc
