//===- codegen/lower/recurrent/RecurrentPackedLoop.cpp - The packed time loop -===//
//
// The loop step of a packed recurrent node (RecurrentPackedLowering.cpp):
// one task per (direction, block of up to 4 batch rows), its time loop
// sequential. Per time step, h·Rᵀ + Rb for every row of the block is one
// call of a packed GEMV per group (GemvEmitter.h: R is read once for all the
// rows; at batch 1 the block is one row), its output in a stack array; then
// the gate math of each row still inside its length runs over the hidden
// units in vectors of the GEMM's width (a masked last vector when hidden is
// not a multiple), reading the step's row of the projection (x·Wᵀ + Wb),
// and writes h (and c) in place and into Y. A row past its length keeps its
// state (the GEMV still computes it; nothing reads the result). The body is
// emitted once per direction so its activations and time order are
// constants. Steps past a row's length give zeros in Y; Y_h / Y_c hold the
// state after the last valid step; a length outside [0, seq] fails the run
// (as the loop-nest kernel).
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/GemvEmitter.h"
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/recurrent/RecurrentActivations.h"
#include "codegen/lower/recurrent/RecurrentLoweringInternal.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <functional>
#include <optional>
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

  /// One batch row's arrays for the gate math of a time step: its rows of
  /// the stack arrays, of the projection (the step's x·Wᵀ + Wb) and of Y
  /// (null when Y is not needed).
  struct CellRow {
    Value *h, *c, *hr, *resetH, *xw, *y;
  };

  Value *stateIndex(int64_t direction, Value *row);
  /// The stack row `r` of an array of `stride` floats per row.
  Value *rowOf(Value *array, int64_t stride, Value *r) {
    return floatAt(array, k_.ir().CreateMul(r, k_.i64(stride)));
  }
  void emitBlock(int64_t direction, Value *firstRow, Value *rows);
  /// The start of Y's row for batch row `row` at time t.
  Value *yRow(int64_t direction, Value *row, Value *t);
  /// Block row r's sequence length (from the lengths slot).
  Value *lengthOf(Value *r);
  /// Each block row's initial state and length, Y's steps past the length
  /// zeroed; returns the slot of the block's longest length.
  Value *emitInitialRows(int64_t direction, Value *firstRow, Value *rows);
  /// The gate math (`phase`) of every block row still inside its length at
  /// step i, reading this direction's `projection`.
  void emitActiveRows(int64_t direction, Value *firstRow, Value *rows, Value *projection, Value *i,
                      int phase);
  /// Y_h and Y_c from the block's final states.
  void emitFinalStates(int64_t direction, Value *firstRow, Value *rows);
  /// out[r] = Rb[group] + vec[r] · R[direction][group]ᵀ for the block's rows.
  void emitGemv(size_t group, int64_t direction, Value *vec, Value *rows);
  /// The gate math of one row: everything (LSTM, RNN, GRU with
  /// linear_before_reset), or GRU's z and r (`phase` 0) and its candidate
  /// and update after the second GEMV (`phase` 1).
  void emitCell(int64_t direction, const CellRow &row, int phase);
  void emitLstmCell(int64_t direction, const CellRow &row);
  void emitGruCell(int64_t direction, const CellRow &row, int phase);

  const Node &node_;
  const Recurrence &rec_;
  const PackedRecurrentLayout &layout_;
  StepBuilder step_;
  KernelBuilder &k_;
  FixedVectorType *vector_;
  unsigned projection_, packedR_;
  int bias_, lens_, h0_, c0_, peep_, y_, yh_, yc_;
  /// Batch rows per task, and floats per row of the h (c, reset_h) and h·Rᵀ arrays.
  int64_t blockRows_ = 1, rowFloats_ = 0, hrFloats_ = 0;
  /// gemvs_[group][rows - 1]: the GEMV of that many rows, null when no block has them.
  std::vector<std::vector<llvm::Function *>> gemvs_;
  Value *h_ = nullptr, *c_ = nullptr, *hr_ = nullptr, *resetH_ = nullptr, *lengths_ = nullptr;
};

/// Stack bytes a task's arrays may take (a block of rows shares them).
constexpr int64_t kMaxBlockBytes = 128 * 1024;

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
  rowFloats_ = (rec.hidden + layout.lanes - 1) / layout.lanes * layout.lanes;
  hrFloats_ = layout.outputFloats;
  blockRows_ =
      std::clamp<int64_t>(kMaxBlockBytes / ((3 * rowFloats_ + hrFloats_) * 4), 1, kMaxGemvRows);
  // The row counts blocks can have: all up to blockRows_, or with a known
  // batch only those of its full blocks and its last one.
  std::vector<bool> needed(size_t(blockRows_ + 1), !rec.batch.constant());
  if (std::optional<int64_t> batch = rec.batch.constant(); batch && *batch > 0) {
    needed[size_t(std::min(*batch, blockRows_))] = true;
    if (*batch % blockRows_ != 0)
      needed[size_t(*batch % blockRows_)] = true;
  }
  if (std::optional<int64_t> batch = rec.batch.constant(); batch && *batch <= blockRows_)
    blockRows_ = std::max<int64_t>(*batch, 1);
  if (std::find(needed.begin(), needed.end(), true) == needed.end())
    needed[1] = true; // a batch of 0 has no block, but the kernel still has its code
  for (const RecurrentGemvGroup &group : layout.groups) {
    gemvs_.emplace_back();
    for (int64_t rows = 1; rows <= blockRows_; ++rows) {
      if (!needed[size_t(rows)]) {
        gemvs_.back().push_back(nullptr);
        continue;
      }
      PackedGemvSpec spec{ctx.uniqueName("recurrent_gemv"),
                          rec.hidden,
                          group.end - group.begin,
                          layout.lanes,
                          bias_ >= 0,
                          rows,
                          rowFloats_,
                          hrFloats_};
      llvm::Function *gemv = emitPackedGemv(ctx.module(), spec);
      gemv->setLinkage(GlobalValue::InternalLinkage);
      gemvs_.back().push_back(gemv);
    }
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
  // Stack arrays of whole vectors per row (the last one's lanes are masked).
  h_ = stackArray(k_, b.getFloatTy(), blockRows_ * rowFloats_, "h");
  c_ = stackArray(k_, b.getFloatTy(), blockRows_ * rowFloats_, "c");
  hr_ = stackArray(k_, b.getFloatTy(), blockRows_ * hrFloats_, "hr");
  resetH_ = stackArray(k_, b.getFloatTy(), blockRows_ * rowFloats_, "reset_h");
  lengths_ = stackArray(k_, b.getInt64Ty(), blockRows_, "lengths");
  const Dim batch = rec_.batch;
  const int64_t blockRows = blockRows_, dirs = rec_.directions;
  auto blocks = [batch, blockRows](FunctionBuilder &f) {
    return f.ceilDiv(f.dim(batch), f.i64(blockRows));
  };
  auto [begin, end] = step_.splitEvenly(
      [blocks, dirs](FunctionBuilder &f) { return f.ir().CreateMul(blocks(f), f.i64(dirs)); }, 1);
  k_.forRange(begin, end, [&](Value *item) {
    Value *blockCount = blocks(k_);
    Value *firstRow = b.CreateMul(b.CreateURem(item, blockCount), k_.i64(blockRows_));
    Value *rows = k_.min(k_.i64(blockRows_), b.CreateSub(k_.dim(rec_.batch), firstRow));
    if (rec_.directions == 1) {
      emitBlock(0, firstRow, rows);
      return;
    }
    k_.ifThenElse(
        b.CreateICmpULT(item, blockCount), [&] { emitBlock(0, firstRow, rows); },
        [&] { emitBlock(1, firstRow, rows); });
  });
  step_.finish();
}

Value *PackedRecurrentLoop::yRow(int64_t direction, Value *row, Value *t) {
  IRBuilder<> &b = k_.ir();
  Value *seq = k_.dim(rec_.seq), *batch = k_.dim(rec_.batch);
  Value *dirs = k_.i64(rec_.directions), *d = k_.i64(direction);
  Value *outer = rec_.batchMajor
                     ? b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(row, seq), t), dirs), d)
                     : b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(t, dirs), d), batch), row);
  return floatAt(buffer(y_), b.CreateMul(outer, k_.i64(rec_.hidden)));
}

Value *PackedRecurrentLoop::lengthOf(Value *r) {
  IRBuilder<> &b = k_.ir();
  return b.CreateLoad(b.getInt64Ty(), b.CreateInBoundsGEP(b.getInt64Ty(), lengths_, r));
}

Value *PackedRecurrentLoop::emitInitialRows(int64_t direction, Value *firstRow, Value *rows) {
  IRBuilder<> &b = k_.ir();
  Value *seq = k_.dim(rec_.seq);
  Value *maxSlot = stackSlot(k_, b.getInt64Ty(), "max_length");
  b.CreateStore(k_.i64(0), maxSlot);
  k_.forRange(k_.i64(0), rows, [&](Value *r) {
    Value *row = b.CreateAdd(firstRow, r);
    Value *state = stateIndex(direction, row);
    Value *h = rowOf(h_, rowFloats_, r), *c = rowOf(c_, rowFloats_, r);
    forVectors([&](Value *j, Value *mask) {
      Value *index = b.CreateAdd(state, j);
      store(h0_ >= 0 ? load(floatAt(buffer(h0_), index), mask) : splat(0), floatAt(h, j), mask);
      if (rec_.kind == CellKind::LSTM)
        store(c0_ >= 0 ? load(floatAt(buffer(c0_), index), mask) : splat(0), floatAt(c, j), mask);
    });
    Value *length = seq;
    if (lens_ >= 0) {
      Value *given = loadIndex(k_, node_.operand(SequenceLens)->dtype(), buffer(lens_), row);
      k_.failIf(b.CreateICmpUGT(given, seq)); // negative lengths too, as the reference
      length = given;
    }
    b.CreateStore(length, b.CreateInBoundsGEP(b.getInt64Ty(), lengths_, r));
    b.CreateStore(k_.max(length, b.CreateLoad(b.getInt64Ty(), maxSlot)), maxSlot);
    if (y_ >= 0)
      k_.forRange(length, seq, [&](Value *t) {
        b.CreateMemSet(yRow(direction, row, t), b.getInt8(0), k_.i64(rec_.hidden * 4),
                       MaybeAlign(4));
      });
  });
  return maxSlot;
}

void PackedRecurrentLoop::emitActiveRows(int64_t direction, Value *firstRow, Value *rows,
                                         Value *projection, Value *i, int phase) {
  IRBuilder<> &b = k_.ir();
  Value *seq = k_.dim(rec_.seq), *batch = k_.dim(rec_.batch);
  bool reverse = rec_.reversed(direction);
  k_.forRange(k_.i64(0), rows, [&](Value *r) {
    Value *length = lengthOf(r);
    k_.ifThen(b.CreateICmpSLT(i, length), [&] {
      Value *row = b.CreateAdd(firstRow, r);
      Value *t = reverse ? b.CreateSub(b.CreateSub(length, k_.i64(1)), i) : i;
      Value *xRow = rec_.batchMajor ? b.CreateAdd(b.CreateMul(row, seq), t)
                                    : b.CreateAdd(b.CreateMul(t, batch), row);
      CellRow cell{rowOf(h_, rowFloats_, r),
                   rowOf(c_, rowFloats_, r),
                   rowOf(hr_, hrFloats_, r),
                   rowOf(resetH_, rowFloats_, r),
                   floatAt(projection, b.CreateMul(xRow, k_.i64(layout_.gateRows))),
                   y_ >= 0 ? yRow(direction, row, t) : nullptr};
      emitCell(direction, cell, phase);
    });
  });
}

void PackedRecurrentLoop::emitFinalStates(int64_t direction, Value *firstRow, Value *rows) {
  IRBuilder<> &b = k_.ir();
  k_.forRange(k_.i64(0), rows, [&](Value *r) {
    Value *state = stateIndex(direction, b.CreateAdd(firstRow, r));
    Value *h = rowOf(h_, rowFloats_, r), *c = rowOf(c_, rowFloats_, r);
    forVectors([&](Value *j, Value *mask) {
      Value *index = b.CreateAdd(state, j);
      if (yh_ >= 0)
        store(load(floatAt(h, j), mask), floatAt(buffer(yh_), index), mask);
      if (yc_ >= 0)
        store(load(floatAt(c, j), mask), floatAt(buffer(yc_), index), mask);
    });
  });
}

void PackedRecurrentLoop::emitBlock(int64_t direction, Value *firstRow, Value *rows) {
  IRBuilder<> &b = k_.ir();
  Value *seq = k_.dim(rec_.seq), *batch = k_.dim(rec_.batch);
  Value *d = k_.i64(direction);
  // Each row's initial state and length; Y's steps past the length are 0.
  Value *maxSlot = emitInitialRows(direction, firstRow, rows);

  // This direction's rows of the projection: [seq·batch][gateRows].
  Value *projection =
      floatAt(buffer(int(projection_)),
              b.CreateMul(b.CreateMul(d, b.CreateMul(seq, batch)), k_.i64(layout_.gateRows)));
  bool twoPhases = rec_.kind == CellKind::GRU && !rec_.linearBeforeReset;
  k_.forRange(
      k_.i64(0), b.CreateLoad(b.getInt64Ty(), maxSlot),
      [&](Value *i) {
        emitGemv(0, direction, h_, rows);
        emitActiveRows(direction, firstRow, rows, projection, i, 0);
        if (twoPhases) {
          emitGemv(1, direction, resetH_, rows);
          emitActiveRows(direction, firstRow, rows, projection, i, 1);
        }
      },
      1, "t");
  emitFinalStates(direction, firstRow, rows);
}

void PackedRecurrentLoop::emitGemv(size_t group, int64_t direction, Value *vec, Value *rows) {
  IRBuilder<> &b = k_.ir();
  const RecurrentGemvGroup &g = layout_.groups[group];
  Value *packed = floatAt(k_.buffer(packedR_), direction * layout_.rFloats + g.packedOffset);
  // Rb of this direction: B[direction][gateRows + row].
  Value *bias = bias_ >= 0
                    ? floatAt(buffer(bias_), (2 * direction + 1) * layout_.gateRows + g.begin)
                    : ConstantPointerNull::get(b.getPtrTy());
  Value *out = floatAt(hr_, g.outputOffset);
  // The kernel of the block's row count: a chain of tests over the counts
  // some block has (none when there is one).
  std::vector<llvm::Function *> kernels;
  std::vector<int64_t> counts;
  for (size_t m = 0; m < gemvs_[group].size(); ++m)
    if (gemvs_[group][m]) {
      kernels.push_back(gemvs_[group][m]);
      counts.push_back(int64_t(m) + 1);
    }
  std::function<void(size_t)> call = [&](size_t i) {
    if (i + 1 == kernels.size()) {
      b.CreateCall(kernels[i], {vec, packed, bias, out});
      return;
    }
    k_.ifThenElse(
        b.CreateICmpEQ(rows, k_.i64(counts[i])),
        [&] {
          b.CreateCall(kernels[i], {vec, packed, bias, out});
        },
        [&] { call(i + 1); });
  };
  call(0);
}

void PackedRecurrentLoop::emitCell(int64_t direction, const CellRow &row, int phase) {
  if (rec_.kind == CellKind::LSTM) {
    emitLstmCell(direction, row);
    return;
  }
  if (rec_.kind == CellKind::GRU) {
    emitGruCell(direction, row, phase);
    return;
  }
  IRBuilder<> &b = k_.ir();
  const RecurrentActivation &act = rec_.activations[size_t(direction)];
  forVectors([&](Value *j, Value *mask) {
    Value *pre = b.CreateFAdd(load(floatAt(row.xw, j), mask), load(floatAt(row.hr, j), mask));
    Value *h = emitActivation(k_, act, clipped(pre));
    store(h, floatAt(row.h, j), mask);
    if (row.y)
      store(h, floatAt(row.y, j), mask);
  });
}

void PackedRecurrentLoop::emitLstmCell(int64_t direction, const CellRow &row) {
  IRBuilder<> &b = k_.ir();
  const RecurrentActivation *act = rec_.activations.data() + direction * 3;
  const int64_t hs = rec_.hidden;
  // Gate order i, o, f, c; peepholes p_i, p_o, p_f.
  forVectors([&](Value *j, Value *mask) {
    auto pre = [&](int64_t gate) {
      Value *x = load(floatAt(row.xw, b.CreateAdd(k_.i64(gate * hs), j)), mask);
      Value *h = load(floatAt(row.hr, b.CreateAdd(k_.i64(layout_.gateOutput(gate, hs)), j)), mask);
      return b.CreateFAdd(x, h);
    };
    auto peephole = [&](int64_t gate, Value *value, Value *cell) {
      if (peep_ < 0)
        return value;
      Value *p =
          load(floatAt(buffer(peep_), b.CreateAdd(k_.i64((direction * 3 + gate) * hs), j)), mask);
      return b.CreateFAdd(value, b.CreateFMul(p, cell));
    };
    Value *c = load(floatAt(row.c, j), mask);
    Value *in = emitActivation(k_, act[0], clipped(peephole(0, pre(0), c)));
    Value *forget = rec_.inputForget ? b.CreateFSub(splat(1), in)
                                     : emitActivation(k_, act[0], clipped(peephole(2, pre(2), c)));
    Value *cell = emitActivation(k_, act[1], clipped(pre(3)));
    Value *next = b.CreateFAdd(b.CreateFMul(forget, c), b.CreateFMul(in, cell));
    store(next, floatAt(row.c, j), mask);
    Value *out = emitActivation(k_, act[0], clipped(peephole(1, pre(1), next)));
    Value *h = b.CreateFMul(out, emitActivation(k_, act[2], next));
    store(h, floatAt(row.h, j), mask);
    if (row.y)
      store(h, floatAt(row.y, j), mask);
  });
}

void PackedRecurrentLoop::emitGruCell(int64_t direction, const CellRow &row, int phase) {
  IRBuilder<> &b = k_.ir();
  const RecurrentActivation *act = rec_.activations.data() + direction * 2;
  const int64_t hs = rec_.hidden;
  auto xAt = [&](int64_t gate, Value *j, Value *mask) {
    return load(floatAt(row.xw, b.CreateAdd(k_.i64(gate * hs), j)), mask);
  };
  auto hrAt = [&](int64_t gate, Value *j) {
    return floatAt(row.hr, b.CreateAdd(k_.i64(layout_.gateOutput(gate, hs)), j));
  };
  auto gate = [&](int64_t index, Value *j, Value *mask) {
    return emitActivation(k_, act[0],
                          clipped(b.CreateFAdd(xAt(index, j, mask), load(hrAt(index, j), mask))));
  };
  // Gate order z, r, h. Without linear_before_reset the candidate sees
  // (r ⊙ h)·Rhᵀ + Rbh: phase 0 keeps z in its h·Rᵀ slot and writes r ⊙ h
  // for the second GEMV, phase 1 runs after it.
  bool twoPhases = !rec_.linearBeforeReset;
  if (twoPhases && phase == 0) {
    forVectors([&](Value *j, Value *mask) {
      Value *z = gate(0, j, mask), *reset = gate(1, j, mask);
      store(z, hrAt(0, j), mask);
      store(b.CreateFMul(reset, load(floatAt(row.h, j), mask)), floatAt(row.resetH, j), mask);
    });
    return;
  }
  forVectors([&](Value *j, Value *mask) {
    Value *z, *recurrent;
    if (twoPhases) {
      z = load(hrAt(0, j), mask);
      recurrent = load(hrAt(2, j), mask);
    } else {
      z = gate(0, j, mask);
      recurrent = b.CreateFMul(gate(1, j, mask), load(hrAt(2, j), mask));
    }
    Value *candidate =
        emitActivation(k_, act[1], clipped(b.CreateFAdd(xAt(2, j, mask), recurrent)));
    Value *h = load(floatAt(row.h, j), mask);
    Value *next =
        b.CreateFAdd(b.CreateFMul(b.CreateFSub(splat(1), z), candidate), b.CreateFMul(z, h));
    store(next, floatAt(row.h, j), mask);
    if (row.y)
      store(next, floatAt(row.y, j), mask);
  });
}

} // namespace

void emitPackedRecurrentLoop(LoweringContext &ctx, const Node &node, const Recurrence &rec,
                             const PackedRecurrentLayout &layout, int32_t projection,
                             int32_t packedR) {
  PackedRecurrentLoop(ctx, node, rec, layout, projection, packedR).emit();
}

} // namespace onnxc::lower
