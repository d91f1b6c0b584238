//===- codegen/lower/RecurrentPackedLoop.cpp - The packed time loop --------===//
//
// The loop step of a packed recurrent node (RecurrentPackedLowering.cpp):
// one task per (direction, batch row), its time loop sequential. Per time
// step, h·Rᵀ + Rb is one call of a packed GEMV per group (its output in a
// stack array), then the gate math runs over the hidden units in vectors of
// the GEMM's width (a masked last vector when hidden is not a multiple),
// reading the step's row of the projection (x·Wᵀ + Wb), and writes h (and
// c) in place and into Y. The body is emitted once per direction so its
// activations and time order are constants. Steps past a row's length give
// zeros in Y; Y_h / Y_c hold the state after the last valid step; a length
// outside [0, seq] fails the run (as the loop-nest kernel).
//
//===----------------------------------------------------------------------===//
#include "codegen/GemvEmitter.h"
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/RecurrentActivations.h"
#include "codegen/lower/RecurrentLoweringInternal.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <string>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

class PackedRecurrentLoop {
public:
  PackedRecurrentLoop(LoweringContext &ctx, const Node &node, const Recurrence &rec,
                      const PackedRecurrentLayout &layout, int32_t projection, int32_t packedR);
  void emit();

private:
  int optionalInput(size_t operand) {
    const onnxc::Value *value = node_.operand(operand);
    return value ? int(step_.input(value)) : -1;
  }
  int optionalOutput(LoweringContext &ctx, size_t result) {
    if (node_.numResults() <= result || !isNeeded(ctx, node_.result(result)))
      return -1;
    return int(step_.output(node_.result(result)));
  }
  Value *buffer(int slot) { return k_.buffer(unsigned(slot)); }
  Value *floatAt(Value *base, Value *offset) { return k_.elementAddress(DType::F32, base, offset); }
  Value *floatAt(Value *base, int64_t offset) { return floatAt(base, k_.i64(offset)); }

  // ---- vectors ----------------------------------------------------------
  /// body(j, mask) over [0, hidden) in vectors: mask null for whole ones,
  /// the lanes below hidden for the last when hidden % lanes != 0.
  void forVectors(function_ref<void(Value *, Value *)> body);
  Value *load(Value *pointer, Value *mask);
  void store(Value *value, Value *pointer, Value *mask);
  Value *splat(double value) { return ConstantFP::get(vector_, value); }
  Value *clipped(Value *v);

  Value *stateIndex(int64_t direction, Value *row);
  void emitSequence(int64_t direction, Value *row);
  /// out = Rb[group] + vec · R[direction][group]ᵀ.
  void emitGemv(size_t group, int64_t direction, Value *vec);
  /// One time step: the GEMVs and the gate math. `xw` points at the step's
  /// projection row, `y` at its row of Y (null when Y is not needed).
  void emitCell(int64_t direction, Value *xw, Value *y);
  void emitLstmCell(int64_t direction, Value *xw, Value *y);
  void emitGruCell(int64_t direction, Value *xw, Value *y);

  const Node &node_;
  const Recurrence &rec_;
  const PackedRecurrentLayout &layout_;
  StepBuilder step_;
  KernelBuilder &k_;
  FixedVectorType *vector_;
  unsigned projection_, packedR_;
  int bias_, lens_, h0_, c0_, peep_, y_, yh_, yc_;
  std::vector<llvm::Function *> gemvs_; // one per group
  Value *h_ = nullptr, *c_ = nullptr, *hr_ = nullptr, *resetH_ = nullptr;
};

PackedRecurrentLoop::PackedRecurrentLoop(LoweringContext &ctx, const Node &node,
                                         const Recurrence &rec, const PackedRecurrentLayout &layout,
                                         int32_t projection, int32_t packedR)
    : node_(node), rec_(rec), layout_(layout),
      step_(ctx.beginStep(node, rec.kind == CellKind::LSTM  ? "lstm"
                                : rec.kind == CellKind::GRU ? "gru"
                                                            : "rnn")),
      k_(step_.kernel()),
      vector_(FixedVectorType::get(k_.ir().getFloatTy(), unsigned(layout.lanes))) {
  projection_ = step_.bufferSlot(projection);
  packedR_ = step_.bufferSlot(packedR);
  bias_ = optionalInput(Bias);
  lens_ = optionalInput(SequenceLens);
  if (lens_ >= 0)
    step_.setFailure("a length in '" + node.operand(SequenceLens)->name() +
                     "' is out of range [0, " + rec.seq.str() + "] for axis " +
                     (rec.batchMajor ? "1" : "0") + " of '" + node.operand(X)->name() + "'");
  h0_ = optionalInput(InitialH);
  bool lstm = rec.kind == CellKind::LSTM;
  c0_ = lstm ? optionalInput(InitialC) : -1;
  peep_ = lstm ? optionalInput(Peepholes) : -1;
  y_ = optionalOutput(ctx, 0);
  yh_ = optionalOutput(ctx, 1);
  yc_ = lstm ? optionalOutput(ctx, 2) : -1;
  for (const RecurrentGemvGroup &group : layout.groups) {
    PackedGemvSpec spec{ctx.uniqueName("recurrent_gemv"), rec.hidden, group.end - group.begin,
                        layout.lanes, bias_ >= 0};
    llvm::Function *gemv = emitPackedGemv(ctx.module(), spec);
    gemv->setLinkage(GlobalValue::InternalLinkage);
    gemvs_.push_back(gemv);
  }
}

void PackedRecurrentLoop::forVectors(function_ref<void(Value *, Value *)> body) {
  const int64_t lanes = layout_.lanes, whole = rec_.hidden / lanes * lanes;
  if (whole > 0)
    k_.forRange(
        k_.i64(0), k_.i64(whole), [&](Value *j) { body(j, nullptr); }, lanes, "j");
  if (whole == rec_.hidden)
    return;
  IRBuilder<> &b = k_.ir();
  SmallVector<Constant *, 16> lanesBelow;
  for (int64_t lane = 0; lane < lanes; ++lane)
    lanesBelow.push_back(b.getInt1(whole + lane < rec_.hidden));
  body(k_.i64(whole), ConstantVector::get(lanesBelow));
}

Value *PackedRecurrentLoop::load(Value *pointer, Value *mask) {
  IRBuilder<> &b = k_.ir();
  if (!mask)
    return b.CreateAlignedLoad(vector_, pointer, Align(4));
  return b.CreateMaskedLoad(vector_, pointer, Align(4), mask, Constant::getNullValue(vector_));
}

void PackedRecurrentLoop::store(Value *value, Value *pointer, Value *mask) {
  IRBuilder<> &b = k_.ir();
  if (!mask)
    b.CreateAlignedStore(value, pointer, Align(4));
  else
    b.CreateMaskedStore(value, pointer, Align(4), mask);
}

Value *PackedRecurrentLoop::clipped(Value *v) {
  if (rec_.clip <= 0)
    return v;
  return clamp(k_, v, splat(-rec_.clip), splat(rec_.clip));
}

/// Element (direction, row, 0) of initial_h/c and Y_h/Y_c.
Value *PackedRecurrentLoop::stateIndex(int64_t direction, Value *row) {
  IRBuilder<> &b = k_.ir();
  Value *d = k_.i64(direction), *dirs = k_.i64(rec_.directions);
  Value *outer = rec_.batchMajor ? b.CreateAdd(b.CreateMul(row, dirs), d)
                                 : b.CreateAdd(b.CreateMul(d, k_.dim(rec_.batch)), row);
  return b.CreateMul(outer, k_.i64(rec_.hidden));
}

void PackedRecurrentLoop::emit() {
  IRBuilder<> &b = k_.ir();
  // Stack arrays rounded up to whole vectors (the last one's lanes are masked).
  const int64_t rounded = (rec_.hidden + layout_.lanes - 1) / layout_.lanes * layout_.lanes;
  h_ = stackArray(k_, b.getFloatTy(), rounded, "h");
  c_ = stackArray(k_, b.getFloatTy(), rounded, "c");
  hr_ = stackArray(k_, b.getFloatTy(), layout_.outputFloats, "hr");
  resetH_ = stackArray(k_, b.getFloatTy(), rounded, "reset_h");
  Dim items = Dim(rec_.directions) * rec_.batch;
  auto [begin, end] = step_.splitEvenly([items](FunctionBuilder &f) { return f.dim(items); }, 1);
  k_.forRange(begin, end, [&](Value *item) {
    Value *batch = k_.dim(rec_.batch);
    Value *row = b.CreateURem(item, batch);
    if (rec_.directions == 1) {
      emitSequence(0, row);
      return;
    }
    k_.ifThenElse(
        b.CreateICmpULT(item, batch), [&] { emitSequence(0, row); }, [&] { emitSequence(1, row); });
  });
  step_.finish();
}

void PackedRecurrentLoop::emitSequence(int64_t direction, Value *row) {
  IRBuilder<> &b = k_.ir();
  Value *state = stateIndex(direction, row);
  forVectors([&](Value *j, Value *mask) {
    Value *index = b.CreateAdd(state, j);
    store(h0_ >= 0 ? load(floatAt(buffer(h0_), index), mask) : splat(0), floatAt(h_, j), mask);
    if (rec_.kind == CellKind::LSTM)
      store(c0_ >= 0 ? load(floatAt(buffer(c0_), index), mask) : splat(0), floatAt(c_, j), mask);
  });
  Value *seq = k_.dim(rec_.seq);
  Value *length = seq;
  if (lens_ >= 0) {
    Value *given = loadIndex(k_, node_.operand(SequenceLens)->dtype(), buffer(lens_), row);
    k_.failIf(b.CreateICmpUGT(given, seq)); // negative lengths too, as the reference
    length = given;
  }
  Value *dirs = k_.i64(rec_.directions), *d = k_.i64(direction);
  auto yRow = [&](Value *t) {
    Value *outer =
        rec_.batchMajor
            ? b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(row, seq), t), dirs), d)
            : b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(t, dirs), d), k_.dim(rec_.batch)),
                          row);
    return floatAt(buffer(y_), b.CreateMul(outer, k_.i64(rec_.hidden)));
  };
  if (y_ >= 0)
    k_.forRange(length, seq, [&](Value *t) {
      b.CreateMemSet(yRow(t), b.getInt8(0), k_.i64(rec_.hidden * 4), MaybeAlign(4));
    });

  // This direction's rows of the projection: [seq·batch][gateRows].
  Value *projection = floatAt(
      buffer(int(projection_)),
      b.CreateMul(b.CreateMul(d, b.CreateMul(seq, k_.dim(rec_.batch))), k_.i64(layout_.gateRows)));
  bool reverse = rec_.reversed(direction);
  k_.forRange(
      k_.i64(0), length,
      [&](Value *i) {
        Value *t = reverse ? b.CreateSub(b.CreateSub(length, k_.i64(1)), i) : i;
        Value *xRow = rec_.batchMajor ? b.CreateAdd(b.CreateMul(row, seq), t)
                                      : b.CreateAdd(b.CreateMul(t, k_.dim(rec_.batch)), row);
        emitCell(direction, floatAt(projection, b.CreateMul(xRow, k_.i64(layout_.gateRows))),
                 y_ >= 0 ? yRow(t) : nullptr);
      },
      1, "t");
  forVectors([&](Value *j, Value *mask) {
    Value *index = b.CreateAdd(state, j);
    if (yh_ >= 0)
      store(load(floatAt(h_, j), mask), floatAt(buffer(yh_), index), mask);
    if (yc_ >= 0)
      store(load(floatAt(c_, j), mask), floatAt(buffer(yc_), index), mask);
  });
}

void PackedRecurrentLoop::emitGemv(size_t group, int64_t direction, Value *vec) {
  IRBuilder<> &b = k_.ir();
  const RecurrentGemvGroup &g = layout_.groups[group];
  Value *packed = floatAt(k_.buffer(packedR_), direction * layout_.rFloats + g.packedOffset);
  // Rb of this direction: B[direction][gateRows + row].
  Value *bias = bias_ >= 0
                    ? floatAt(buffer(bias_), (2 * direction + 1) * layout_.gateRows + g.begin)
                    : ConstantPointerNull::get(b.getPtrTy());
  b.CreateCall(gemvs_[group], {vec, packed, bias, floatAt(hr_, g.outputOffset)});
}

void PackedRecurrentLoop::emitCell(int64_t direction, Value *xw, Value *y) {
  if (rec_.kind == CellKind::LSTM) {
    emitLstmCell(direction, xw, y);
    return;
  }
  if (rec_.kind == CellKind::GRU) {
    emitGruCell(direction, xw, y);
    return;
  }
  IRBuilder<> &b = k_.ir();
  const RecurrentActivation &act = rec_.activations[size_t(direction)];
  emitGemv(0, direction, h_);
  forVectors([&](Value *j, Value *mask) {
    Value *pre = b.CreateFAdd(load(floatAt(xw, j), mask), load(floatAt(hr_, j), mask));
    Value *h = emitActivation(k_, act, clipped(pre));
    store(h, floatAt(h_, j), mask);
    if (y)
      store(h, floatAt(y, j), mask);
  });
}

void PackedRecurrentLoop::emitLstmCell(int64_t direction, Value *xw, Value *y) {
  IRBuilder<> &b = k_.ir();
  const RecurrentActivation *act = rec_.activations.data() + direction * 3;
  const int64_t hs = rec_.hidden;
  emitGemv(0, direction, h_);
  // Gate order i, o, f, c; peepholes p_i, p_o, p_f.
  forVectors([&](Value *j, Value *mask) {
    auto pre = [&](int64_t gate) {
      Value *x = load(floatAt(xw, b.CreateAdd(k_.i64(gate * hs), j)), mask);
      Value *h = load(floatAt(hr_, b.CreateAdd(k_.i64(layout_.gateOutput(gate, hs)), j)), mask);
      return b.CreateFAdd(x, h);
    };
    auto peephole = [&](int64_t gate, Value *value, Value *cell) {
      if (peep_ < 0)
        return value;
      Value *p =
          load(floatAt(buffer(peep_), b.CreateAdd(k_.i64((direction * 3 + gate) * hs), j)), mask);
      return b.CreateFAdd(value, b.CreateFMul(p, cell));
    };
    Value *c = load(floatAt(c_, j), mask);
    Value *in = emitActivation(k_, act[0], clipped(peephole(0, pre(0), c)));
    Value *forget = rec_.inputForget ? b.CreateFSub(splat(1), in)
                                     : emitActivation(k_, act[0], clipped(peephole(2, pre(2), c)));
    Value *cell = emitActivation(k_, act[1], clipped(pre(3)));
    Value *next = b.CreateFAdd(b.CreateFMul(forget, c), b.CreateFMul(in, cell));
    store(next, floatAt(c_, j), mask);
    Value *out = emitActivation(k_, act[0], clipped(peephole(1, pre(1), next)));
    Value *h = b.CreateFMul(out, emitActivation(k_, act[2], next));
    store(h, floatAt(h_, j), mask);
    if (y)
      store(h, floatAt(y, j), mask);
  });
}

void PackedRecurrentLoop::emitGruCell(int64_t direction, Value *xw, Value *y) {
  IRBuilder<> &b = k_.ir();
  const RecurrentActivation *act = rec_.activations.data() + direction * 2;
  const int64_t hs = rec_.hidden;
  auto xAt = [&](int64_t gate, Value *j, Value *mask) {
    return load(floatAt(xw, b.CreateAdd(k_.i64(gate * hs), j)), mask);
  };
  auto hrAt = [&](int64_t gate, Value *j) {
    return floatAt(hr_, b.CreateAdd(k_.i64(layout_.gateOutput(gate, hs)), j));
  };
  emitGemv(0, direction, h_);
  // Gate order z, r, h. Without linear_before_reset the candidate sees
  // (r ⊙ h)·Rhᵀ + Rbh: z is kept in its h·Rᵀ slot, r ⊙ h feeds a second GEMV.
  if (!rec_.linearBeforeReset) {
    forVectors([&](Value *j, Value *mask) {
      Value *z = emitActivation(k_, act[0],
                                clipped(b.CreateFAdd(xAt(0, j, mask), load(hrAt(0, j), mask))));
      Value *reset = emitActivation(k_, act[0],
                                    clipped(b.CreateFAdd(xAt(1, j, mask), load(hrAt(1, j), mask))));
      store(z, hrAt(0, j), mask);
      store(b.CreateFMul(reset, load(floatAt(h_, j), mask)), floatAt(resetH_, j), mask);
    });
    emitGemv(1, direction, resetH_);
  }
  forVectors([&](Value *j, Value *mask) {
    Value *z, *recurrent;
    if (rec_.linearBeforeReset) {
      z = emitActivation(k_, act[0],
                         clipped(b.CreateFAdd(xAt(0, j, mask), load(hrAt(0, j), mask))));
      Value *reset = emitActivation(k_, act[0],
                                    clipped(b.CreateFAdd(xAt(1, j, mask), load(hrAt(1, j), mask))));
      recurrent = b.CreateFMul(reset, load(hrAt(2, j), mask));
    } else {
      z = load(hrAt(0, j), mask);
      recurrent = load(hrAt(2, j), mask);
    }
    Value *candidate =
        emitActivation(k_, act[1], clipped(b.CreateFAdd(xAt(2, j, mask), recurrent)));
    Value *h = load(floatAt(h_, j), mask);
    Value *next =
        b.CreateFAdd(b.CreateFMul(b.CreateFSub(splat(1), z), candidate), b.CreateFMul(z, h));
    store(next, floatAt(h_, j), mask);
    if (y)
      store(next, floatAt(y, j), mask);
  });
}

} // namespace

void emitPackedRecurrentLoop(LoweringContext &ctx, const Node &node, const Recurrence &rec,
                             const PackedRecurrentLayout &layout, int32_t projection,
                             int32_t packedR) {
  PackedRecurrentLoop(ctx, node, rec, layout, projection, packedR).emit();
}

} // namespace onnxc::lower
