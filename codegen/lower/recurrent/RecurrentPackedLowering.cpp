//===- codegen/lower/recurrent/RecurrentPackedLowering.cpp - LSTM/GRU/RNN on GEMMs -===//
//
// An f32 recurrent node as up to three steps:
//
//   pack        only for W or R computed at run time: packs them into arena
//               buffers in the layouts below (constant ones are packed at
//               compile time into the artifact, once per weight)
//   projection  XW[d] = X · W[d]ᵀ + Wb[d] for every time step and batch row
//               at once: X is [seq·batch, input] in either layout, so this
//               is one packed GEMM per direction (GemmEmitter.h), tasks over
//               (direction, block of rows), into an arena buffer
//               [directions][seq·batch][gates·hidden]
//   loop        the time loop (RecurrentPackedLoop.cpp): per step h·Rᵀ + Rb
//               as a packed GEMV (GemvEmitter.h) and the gate math on
//               vectors, reading its row of XW
//
// R is packed as GEMM B panels with one K block of `hidden` rows, per
// direction and per GEMV group (RecurrentLoweringInternal.h). The arena
// buffers live only from the first step naming them to the last.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/GemmEmitter.h"
#include "codegen/kernels/GemvEmitter.h"
#include "codegen/lower/linearalgebra/LinearAlgebraLowering.h"
#include "codegen/lower/recurrent/RecurrentLoweringInternal.h"
#include "ir/Error.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>

namespace onnxc::lower {

int64_t PackedRecurrentLayout::gateOutput(int64_t gate, int64_t hidden) const {
  const int64_t row = gate * hidden;
  for (const RecurrentGemvGroup &group : groups)
    if (row >= group.begin && row < group.end)
      return group.outputOffset + row - group.begin;
  fail("codegen: recurrent gate ", gate, " is in no GEMV group");
}

PackedRecurrentLayout packedRecurrentLayout(const Recurrence &rec, int64_t lanes) {
  PackedRecurrentLayout layout;
  layout.lanes = lanes;
  layout.nr = 2 * lanes;
  layout.input = *rec.input.constant();
  layout.gateRows = rec.gates * rec.hidden;
  layout.wBlocking = chooseGemmBlocking(layout.input, lanes);
  layout.wFloats = packedGemmWeightsSize(layout.input, layout.gateRows, layout.nr);
  std::vector<int64_t> bounds = {0, layout.gateRows};
  if (rec.kind == CellKind::GRU && !rec.linearBeforeReset)
    bounds = {0, 2 * rec.hidden, layout.gateRows};
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    RecurrentGemvGroup group;
    group.begin = bounds[i];
    group.end = bounds[i + 1];
    group.packedOffset = layout.rFloats;
    group.outputOffset = layout.outputFloats;
    layout.rFloats += packedGemmWeightsSize(rec.hidden, group.end - group.begin, layout.nr);
    layout.outputFloats += gemmPaddedColumns(group.end - group.begin, layout.nr);
    layout.groups.push_back(group);
  }
  return layout;
}

namespace {

std::shared_ptr<std::vector<uint8_t>> floatBuffer(int64_t floats) {
  return std::make_shared<std::vector<uint8_t>>(size_t(floats) * sizeof(float));
}

/// W (every direction) packed as the projection GEMM's B.
ConstantBytes packW(const Tensor &w, const Recurrence &rec, const PackedRecurrentLayout &layout) {
  auto bytes = floatBuffer(rec.directions * layout.wFloats);
  auto *out = reinterpret_cast<float *>(bytes->data());
  for (int64_t d = 0; d < rec.directions; ++d)
    packGemmWeights(w.data<float>() + d * layout.gateRows * layout.input, layout.input,
                    layout.gateRows, /*transposed=*/true, layout.wBlocking,
                    out + d * layout.wFloats);
  return ConstantBytes(bytes);
}

/// R (every direction and group) packed as the GEMVs' B.
ConstantBytes packR(const Tensor &r, const Recurrence &rec, const PackedRecurrentLayout &layout) {
  auto bytes = floatBuffer(rec.directions * layout.rFloats);
  auto *out = reinterpret_cast<float *>(bytes->data());
  const GemmBlocking blocking = gemvBlocking(rec.hidden, layout.lanes);
  for (int64_t d = 0; d < rec.directions; ++d)
    for (const RecurrentGemvGroup &group : layout.groups)
      packGemmWeights(r.data<float>() + (d * layout.gateRows + group.begin) * rec.hidden,
                      rec.hidden, group.end - group.begin, /*transposed=*/true, blocking,
                      out + d * layout.rFloats + group.packedOffset);
  return ConstantBytes(bytes);
}

const Tensor *constantWeights(const LoweringContext &ctx, const onnxc::Value *value) {
  const Tensor *tensor = ctx.constantValue(value);
  return tensor && tensor->hasData() ? tensor : nullptr;
}

std::string packingKey(const char *what, const onnxc::Value *value,
                       const PackedRecurrentLayout &layout, const Recurrence &rec) {
  std::ostringstream key;
  key << what << ":" << value->name() << ":i" << layout.input << ":h" << rec.hidden << ":g"
      << rec.gates << ":groups" << layout.groups.size() << ":kc" << layout.wBlocking.kc << ":nr"
      << layout.nr;
  return key.str();
}

/// Packs the weights that are only known at run time into `packedW` /
/// `packedR` (plan buffers; -1 for the ones packed at compile time). One
/// task per direction.
void emitPackStep(LoweringContext &ctx, const Node &node, const Recurrence &rec,
                  const PackedRecurrentLayout &layout, int32_t packedW, int32_t packedR) {
  StepBuilder step = ctx.beginStep(node, "recurrent_pack");
  step.setName(std::string(node.opName()) + " weight packing" +
               (node.name().empty() ? "" : " " + node.name()));
  KernelBuilder &k = step.kernel();
  llvm::IRBuilder<> &ir = k.ir();
  auto floatAt = [&](llvm::Value *base, llvm::Value *offset) {
    return k.elementAddress(DType::F32, base, offset);
  };
  int wSlot = -1, wOut = -1, rSlot = -1, rOut = -1;
  if (packedW >= 0) {
    wSlot = int(step.input(node.operand(W)));
    wOut = int(step.bufferSlot(packedW));
  }
  if (packedR >= 0) {
    rSlot = int(step.input(node.operand(R)));
    rOut = int(step.bufferSlot(packedR));
  }
  llvm::Function *packWKernel = nullptr, *packRKernel = nullptr;
  if (wSlot >= 0) {
    packWKernel = emitGemmPackKernel(ctx.module(), ctx.uniqueName("recurrent_pack_w"),
                                     layout.wBlocking, true);
    packWKernel->setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  if (rSlot >= 0) {
    packRKernel = emitGemmPackKernel(ctx.module(), ctx.uniqueName("recurrent_pack_r"),
                                     gemvBlocking(rec.hidden, layout.lanes), true);
    packRKernel->setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  auto [begin, end] =
      step.splitEvenly([dirs = rec.directions](FunctionBuilder &f) { return f.i64(dirs); }, 1);
  k.forRange(begin, end, [&](llvm::Value *d) {
    if (packWKernel) {
      llvm::Value *source = floatAt(k.buffer(unsigned(wSlot)),
                                    ir.CreateMul(d, k.i64(layout.gateRows * layout.input)));
      llvm::Value *target =
          floatAt(k.buffer(unsigned(wOut)), ir.CreateMul(d, k.i64(layout.wFloats)));
      ir.CreateCall(packWKernel, {source, k.i64(layout.input), k.i64(layout.input),
                                  k.i64(layout.gateRows), target});
    }
    if (packRKernel)
      for (const RecurrentGemvGroup &group : layout.groups) {
        llvm::Value *source =
            floatAt(k.buffer(unsigned(rSlot)),
                    ir.CreateAdd(ir.CreateMul(d, k.i64(layout.gateRows * rec.hidden)),
                                 k.i64(group.begin * rec.hidden)));
        llvm::Value *target =
            floatAt(k.buffer(unsigned(rOut)), ir.CreateAdd(ir.CreateMul(d, k.i64(layout.rFloats)),
                                                           k.i64(group.packedOffset)));
        ir.CreateCall(packRKernel, {source, k.i64(rec.hidden), k.i64(rec.hidden),
                                    k.i64(group.end - group.begin), target});
      }
  });
  step.finish();
}

/// XW[d] = X · W[d]ᵀ + Wb[d] into plan buffer `projection`.
void emitProjectionStep(LoweringContext &ctx, const Node &node, const Recurrence &rec,
                        const PackedRecurrentLayout &layout, int32_t packedW, int32_t projection) {
  StepBuilder step = ctx.beginStep(node, "recurrent_projection");
  step.setName(std::string(node.opName()) + " input projection" +
               (node.name().empty() ? "" : " " + node.name()));
  unsigned x = step.input(node.operand(X));
  unsigned w = step.bufferSlot(packedW);
  const onnxc::Value *biasValue = node.operand(Bias);
  int bias = biasValue ? int(step.input(biasValue)) : -1;
  unsigned out = step.bufferSlot(projection);

  PackedGemmSpec spec{ctx.uniqueName("recurrent_projection_gemm"), layout.input, layout.gateRows,
                      GemmEpilogue{}, layout.wBlocking};
  spec.epilogue.bias = bias >= 0;
  llvm::Function *gemm = emitPackedGemm(ctx.module(), spec);
  gemm->setLinkage(llvm::GlobalValue::InternalLinkage);

  KernelBuilder &k = step.kernel();
  llvm::IRBuilder<> &ir = k.ir();
  auto floatAt = [&](llvm::Value *base, llvm::Value *offset) {
    return k.elementAddress(DType::F32, base, offset);
  };
  const Dim rows = rec.seq * rec.batch;
  // As lowerPackedMatMul: the fewest whole tiles doing >= 64K multiply-adds
  // per pass over the packed W.
  const int64_t mr = layout.wBlocking.mr();
  const int64_t taskRows = std::clamp<int64_t>(
      (65536 / (layout.input * layout.gateRows) + mr - 1) / mr * mr, mr, layout.wBlocking.mc);
  splitItemsAndRows(
      step, Dim(rec.directions), [rows](FunctionBuilder &f) { return f.dim(rows); },
      [rows, dirs = rec.directions, taskRows, mr](FunctionBuilder &f) {
        return chunkRows(f, f.i64(dirs), f.dim(rows), taskRows, taskRows, mr);
      },
      [&](llvm::Value *d, llvm::Value *rowBegin, llvm::Value *rowEnd) {
        llvm::Value *null = llvm::ConstantPointerNull::get(ir.getPtrTy());
        llvm::Value *biasPointer = bias >= 0 ? floatAt(k.buffer(unsigned(bias)),
                                                       ir.CreateMul(d, k.i64(2 * layout.gateRows)))
                                             : null;
        llvm::Value *c = floatAt(
            k.buffer(out), ir.CreateMul(ir.CreateMul(d, k.dim(rows)), k.i64(layout.gateRows)));
        ir.CreateCall(gemm, {k.buffer(x), k.i64(layout.input),
                             floatAt(k.buffer(w), ir.CreateMul(d, k.i64(layout.wFloats))), c,
                             k.i64(layout.gateRows), rowBegin, rowEnd, biasPointer, null, k.i64(0),
                             k.i64(0), k.i64(layout.gateRows)});
      });
  step.finish();
}

} // namespace

bool lowerPackedRecurrence(LoweringContext &ctx, const Node &node, const Recurrence &rec) {
  if (rec.dtype != DType::F32 || !ctx.hasAvx2Fma() || !rec.input.constant() ||
      *rec.input.constant() <= 0)
    return false;
  const PackedRecurrentLayout layout = packedRecurrentLayout(rec, ctx.gemmLanes());
  const onnxc::Value *w = node.operand(W), *r = node.operand(R);
  int32_t packedW = -1, packedR = -1, runtimeW = -1, runtimeR = -1;
  if (const Tensor *constant = constantWeights(ctx, w))
    packedW = ctx.sharedConstant(packingKey("recurrent-w", w, layout, rec),
                                 [&] { return packW(*constant, rec, layout); });
  else
    packedW = runtimeW = ctx.addScratch(Dim(rec.directions * layout.wFloats * 4));
  if (const Tensor *constant = constantWeights(ctx, r))
    packedR = ctx.sharedConstant(packingKey("recurrent-r", r, layout, rec),
                                 [&] { return packR(*constant, rec, layout); });
  else
    packedR = runtimeR = ctx.addScratch(Dim(rec.directions * layout.rFloats * 4));
  if (runtimeW >= 0 || runtimeR >= 0)
    emitPackStep(ctx, node, rec, layout, runtimeW, runtimeR);
  const int32_t projection =
      ctx.addScratch(Dim(rec.directions * layout.gateRows * 4) * rec.seq * rec.batch);
  emitProjectionStep(ctx, node, rec, layout, packedW, projection);
  emitPackedRecurrentLoop(ctx, node, rec, layout, projection, packedR);
  return true;
}

} // namespace onnxc::lower
