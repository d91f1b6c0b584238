//===- codegen/lower/recurrent/RecurrentLowering.cpp - LSTM, GRU and RNN --===//
//
// The recurrent ops as ir/eval/RecurrentKernels.cpp computes them (opset-14
// form with `layout`): reading and checking the node for both emitters
// (RecurrentLoweringInternal.h), the registration, and the loop-nest
// emitter. An f32 node with a constant input size on an AVX2+FMA target
// takes the packed emitter instead (RecurrentPackedLowering.cpp: the input
// projections of all steps as one GEMM, the recurrent product as a GEMV);
// the loop nest is what other float types, a symbolic input size and
// targets without AVX2+FMA get.
//
// Loop nest: one task item per (direction, batch row): the time loop runs
// sequentially inside it over the row's sequence length, with the state h
// (and c) and the gate pre-activations x·Wᵀ + Wb and h·Rᵀ + Rb in stack
// arrays of a few hidden sizes, so the hidden size must be a known constant
// (it is whenever W and R are initializers; both emitters need it). The
// body is emitted once per direction so the direction's activations and
// time order are constants. Steps past a row's length give zeros in Y;
// Y_h / Y_c hold the state after the last valid step. A length outside
// [0, seq] fails the run.
//
// The gate products x·Wᵀ and h·Rᵀ are dot products of contiguous rows; for
// f32 they run in <8 x float> vectors with four accumulators (reassociated,
// as the GEMMs' sums are), since the loop vectorizer will not reorder a
// float reduction and a scalar chain waits on every add.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/recurrent/RecurrentActivations.h"
#include "codegen/lower/recurrent/RecurrentLoweringInternal.h"

#include "llvm/IR/Intrinsics.h"

#include <string>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

/// Stack bytes the kernels may use for their state and gate arrays.
constexpr int64_t kMaxScratchBytes = 128 * 1024;

int64_t gateCount(CellKind kind) {
  return kind == CellKind::LSTM ? 4 : kind == CellKind::GRU ? 3 : 1;
}

void requireShape(const LoweringContext &ctx, const Node &node, size_t operand, const char *what,
                  const std::vector<Dim> &expected) {
  const onnxc::Value *value = node.operand(operand);
  if (!value)
    return;
  const Shape &shape = value->shape();
  bool fits = shape.rank() == expected.size() && value->dtype() == node.operand(X)->dtype();
  for (size_t i = 0; fits && i < expected.size(); ++i)
    fits = shape[i].provablyEqual(expected[i]);
  if (!fits)
    ctx.unsupported(node, std::string("operand ") + what + " " + shape.str() + " is not " +
                              Shape(expected).str() + " of the input's type");
}

} // namespace

Recurrence readRecurrence(const LoweringContext &ctx, const Node &node, CellKind kind) {
  Recurrence rec;
  rec.kind = kind;
  rec.gates = gateCount(kind);
  const onnxc::Value *x = node.operand(X);
  rec.dtype = x->dtype();
  const Shape &xs = x->shape();
  if (!isFloat(rec.dtype) || xs.rank() != 3)
    ctx.unsupported(node, "X must be a 3-D floating tensor, got " + xs.str());
  rec.batchMajor = node.getInt("layout", 0) != 0;
  rec.seq = rec.batchMajor ? xs[1] : xs[0];
  rec.batch = rec.batchMajor ? xs[0] : xs[1];
  rec.input = xs[2];
  std::string direction = node.getString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    ctx.unsupported(node, "unknown direction '" + direction + "'");
  rec.directions = direction == "bidirectional" ? 2 : 1;
  rec.reverseOnly = direction == "reverse";
  const Shape &rs = node.operand(R)->shape();
  std::optional<int64_t> hidden = node.hasAttr("hidden_size")
                                      ? std::optional<int64_t>(node.getInt("hidden_size", 0))
                                      : (rs.rank() == 3 ? rs[2].constant() : std::nullopt);
  if (!hidden || *hidden <= 0)
    ctx.unsupported(node, "the hidden size must be a known positive constant");
  rec.hidden = *hidden;
  int64_t bytes = (3 + 2 * rec.gates) * rec.hidden * int64_t(dtypeSize(realDType(rec.dtype)));
  if (bytes > kMaxScratchBytes)
    ctx.unsupported(node, "hidden size " + std::to_string(rec.hidden) +
                              " needs more stack scratch than the kernel allows");

  Dim dirs(rec.directions), rows(rec.gates * rec.hidden), h(rec.hidden);
  requireShape(ctx, node, W, "W", {dirs, rows, rec.input});
  requireShape(ctx, node, R, "R", {dirs, rows, h});
  requireShape(ctx, node, Bias, "B", {dirs, Dim(2) * rows});
  std::vector<Dim> state =
      rec.batchMajor ? std::vector<Dim>{rec.batch, dirs, h} : std::vector<Dim>{dirs, rec.batch, h};
  requireShape(ctx, node, InitialH, "initial_h", state);
  if (const onnxc::Value *lens = node.operand(SequenceLens);
      lens && (!isInteger(lens->dtype()) || lens->shape().rank() != 1 ||
               !lens->shape()[0].provablyEqual(rec.batch)))
    ctx.unsupported(node, "sequence_lens " + lens->shape().str() + " is not an integer [" +
                              rec.batch.str() + "]");
  if (kind == CellKind::LSTM) {
    requireShape(ctx, node, InitialC, "initial_c", state);
    requireShape(ctx, node, Peepholes, "P", {dirs, Dim(3 * rec.hidden)});
    rec.inputForget = node.getInt("input_forget", 0) != 0;
  }
  rec.linearBeforeReset = node.getInt("linear_before_reset", 0) != 0;
  rec.clip = node.getFloat("clip", 0.0f);
  if (rec.clip < 0)
    ctx.unsupported(node, "clip must be positive, got " + std::to_string(rec.clip));
  static const std::vector<std::string> lstm = {"Sigmoid", "Tanh", "Tanh"},
                                        gru = {"Sigmoid", "Tanh"}, rnn = {"Tanh"};
  const std::vector<std::string> &defaults = kind == CellKind::LSTM  ? lstm
                                             : kind == CellKind::GRU ? gru
                                                                     : rnn;
  rec.activations = recurrentActivations(node, defaults.size(), rec.directions, defaults);
  return rec;
}

namespace {

constexpr unsigned kDotWidth = 8;
constexpr unsigned kDotUnroll = 4;

/// sum_k a[k] * c[k] over `length` contiguous floats at `a` and `c`.
Value *emitDotF32(KernelBuilder &k, Value *a, Value *c, Value *length) {
  IRBuilder<> &b = k.ir();
  auto *vec = FixedVectorType::get(b.getFloatTy(), kDotWidth);
  Value *zero = ConstantFP::get(vec, 0.0);
  auto address = [&](Value *base, Value *index) {
    return b.CreateInBoundsGEP(b.getFloatTy(), base, index);
  };
  auto load = [&](Value *base, Value *index) {
    return b.CreateAlignedLoad(vec, address(base, index), Align(4));
  };
  auto fma = [&](Value *acc, Value *x, Value *y) {
    return b.CreateIntrinsic(Intrinsic::fmuladd, {vec}, {x, y, acc});
  };
  int64_t block = kDotWidth * kDotUnroll;
  Value *blockEnd = b.CreateAnd(length, k.i64(-block));
  std::vector<Value *> accs = k.forRangeCarried(
      k.i64(0), blockEnd, std::vector<Value *>(kDotUnroll, zero),
      [&](Value *i, ArrayRef<Value *> acc) {
        std::vector<Value *> next;
        for (unsigned u = 0; u < kDotUnroll; ++u) {
          Value *index = b.CreateAdd(i, k.i64(int64_t(u * kDotWidth)));
          next.push_back(fma(acc[u], load(a, index), load(c, index)));
        }
        return next;
      },
      block, "dot");
  Value *sum = b.CreateFAdd(b.CreateFAdd(accs[0], accs[1]), b.CreateFAdd(accs[2], accs[3]));
  Value *vectorEnd = b.CreateAnd(length, k.i64(-int64_t(kDotWidth)));
  sum = k.forRangeCarried(
      blockEnd, vectorEnd, {sum},
      [&](Value *i, ArrayRef<Value *> acc) -> std::vector<Value *> {
        return {fma(acc[0], load(a, i), load(c, i))};
      },
      kDotWidth, "dot_tail")[0];
  // The last length % 8 elements: masked loads read the lanes past the end as 0.
  SmallVector<Constant *, kDotWidth> lanes;
  for (unsigned lane = 0; lane < kDotWidth; ++lane)
    lanes.push_back(b.getInt64(lane));
  Value *lane = b.CreateAdd(b.CreateVectorSplat(kDotWidth, vectorEnd), ConstantVector::get(lanes));
  Value *mask = b.CreateICmpSLT(lane, b.CreateVectorSplat(kDotWidth, length));
  Value *restA = b.CreateMaskedLoad(vec, address(a, vectorEnd), Align(4), mask, zero);
  Value *restC = b.CreateMaskedLoad(vec, address(c, vectorEnd), Align(4), mask, zero);
  sum = fma(sum, restA, restC);
  Value *total = b.CreateFAddReduce(ConstantFP::getNegativeZero(b.getFloatTy()), sum);
  cast<Instruction>(total)->setHasAllowReassoc(true); // a tree, not eight dependent adds
  return total;
}

/// Emits the kernel of one recurrent node.
class RecurrentKernel {
public:
  RecurrentKernel(LoweringContext &ctx, const Node &node, const Recurrence &rec);
  void emit();

private:
  int optionalInput(const onnxc::Value *value) { return value ? int(step_.input(value)) : -1; }
  int optionalOutput(LoweringContext &ctx, size_t result) {
    if (node_.numResults() <= result || !isNeeded(ctx, node_.result(result)))
      return -1;
    return int(step_.output(node_.result(result)));
  }
  Value *dim(const Dim &d) { return k_.dim(d); }
  Value *hiddenSize() { return k_.i64(rec_.hidden); }
  Value *buffer(int slot) { return k_.buffer(unsigned(slot)); }
  Value *loadScratch(Value *array, Value *index) { return k_.loadElement(real_, array, index); }
  void storeScratch(Value *value, Value *array, Value *index) {
    k_.storeElement(real_, value, array, index);
  }
  Value *clipped(Value *v);
  Value *stateIndex(int64_t direction, Value *row, Value *j);

  void emitSequence(int64_t direction, Value *row);
  /// out[r] = bias[biasOffset + r] + sum_k vec(k) * weights[direction][r][k]
  /// for r in [rowBegin, rowEnd). `vecBase` is the address of vec(0) when
  /// the vector is contiguous floats (then an f32 node takes the vector path).
  void emitGateProducts(Value *out, unsigned weights, int64_t direction, Value *width,
                        int64_t biasOffset, int64_t rowBegin, int64_t rowEnd,
                        function_ref<Value *(Value *)> vec, Value *vecBase);
  void emitCell(int64_t direction);

  const Node &node_;
  const Recurrence &rec_;
  StepBuilder step_;
  KernelBuilder &k_;
  DType real_;
  unsigned x_, w_, r_;
  int bias_, lens_, h0_, c0_, peep_, y_, yh_, yc_;
  Value *h_ = nullptr, *c_ = nullptr, *xw_ = nullptr, *hr_ = nullptr, *resetH_ = nullptr;
};

RecurrentKernel::RecurrentKernel(LoweringContext &ctx, const Node &node, const Recurrence &rec)
    : node_(node), rec_(rec), step_(ctx.beginStep(node, rec.kind == CellKind::LSTM  ? "lstm"
                                                        : rec.kind == CellKind::GRU ? "gru"
                                                                                    : "rnn")),
      k_(step_.kernel()), real_(realDType(rec.dtype)) {
  x_ = step_.input(node.operand(X));
  w_ = step_.input(node.operand(W));
  r_ = step_.input(node.operand(R));
  bias_ = optionalInput(node.operand(Bias));
  lens_ = optionalInput(node.operand(SequenceLens));
  if (lens_ >= 0)
    step_.setFailure("a length in '" + node.operand(SequenceLens)->name() +
                     "' is out of range [0, " + rec.seq.str() + "] for axis " +
                     (rec.batchMajor ? "1" : "0") + " of '" + node.operand(X)->name() + "'");
  h0_ = optionalInput(node.operand(InitialH));
  bool lstm = rec.kind == CellKind::LSTM;
  c0_ = lstm ? optionalInput(node.operand(InitialC)) : -1;
  peep_ = lstm ? optionalInput(node.operand(Peepholes)) : -1;
  y_ = optionalOutput(ctx, 0);
  yh_ = optionalOutput(ctx, 1);
  yc_ = lstm ? optionalOutput(ctx, 2) : -1;
}

Value *RecurrentKernel::clipped(Value *v) {
  if (rec_.clip <= 0)
    return v;
  return clamp(k_, v, k_.constant(real_, -rec_.clip), k_.constant(real_, rec_.clip));
}

/// Element (direction, row, j) of initial_h/c and Y_h/Y_c.
Value *RecurrentKernel::stateIndex(int64_t direction, Value *row, Value *j) {
  IRBuilder<> &b = k_.ir();
  Value *d = k_.i64(direction), *dirs = k_.i64(rec_.directions);
  Value *outer = rec_.batchMajor ? b.CreateAdd(b.CreateMul(row, dirs), d)
                                 : b.CreateAdd(b.CreateMul(d, dim(rec_.batch)), row);
  return b.CreateAdd(b.CreateMul(outer, hiddenSize()), j);
}

void RecurrentKernel::emit() {
  IRBuilder<> &b = k_.ir();
  Type *real = k_.storageType(real_);
  int64_t hidden = rec_.hidden, rows = rec_.gates * hidden;
  h_ = stackArray(k_, real, hidden, "h");
  c_ = stackArray(k_, real, hidden, "c");
  xw_ = stackArray(k_, real, rows, "xw");
  hr_ = stackArray(k_, real, rows, "hr");
  resetH_ = stackArray(k_, real, hidden, "reset_h");
  Dim items = Dim(rec_.directions) * rec_.batch;
  auto [begin, end] = step_.splitEvenly([items](FunctionBuilder &f) { return f.dim(items); }, 1);
  k_.forRange(begin, end, [&](Value *item) {
    Value *batch = dim(rec_.batch);
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

void RecurrentKernel::emitSequence(int64_t direction, Value *row) {
  IRBuilder<> &b = k_.ir();
  bool reverse = rec_.reverseOnly || direction == 1;
  Value *zero = k_.constant(real_, 0.0);
  Value *hidden = hiddenSize();
  k_.forRange(k_.i64(0), hidden, [&](Value *j) {
    Value *index = stateIndex(direction, row, j);
    storeScratch(h0_ >= 0 ? loadReal(k_, rec_.dtype, buffer(h0_), index) : zero, h_, j);
    storeScratch(c0_ >= 0 ? loadReal(k_, rec_.dtype, buffer(c0_), index) : zero, c_, j);
  });
  Value *seq = dim(rec_.seq);
  Value *length = seq;
  if (lens_ >= 0) {
    Value *given = loadIndex(k_, node_.operand(SequenceLens)->dtype(), buffer(lens_), row);
    k_.failIf(b.CreateICmpUGT(given, seq)); // negative lengths too, as the reference
    length = given;
  }
  Value *dirs = k_.i64(rec_.directions), *d = k_.i64(direction);
  auto yIndex = [&](Value *t, Value *j) {
    Value *outer =
        rec_.batchMajor
            ? b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(row, seq), t), dirs), d)
            : b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(t, dirs), d), dim(rec_.batch)), row);
    return b.CreateAdd(b.CreateMul(outer, hidden), j);
  };
  if (y_ >= 0)
    k_.forRange(length, seq, [&](Value *t) {
      k_.forRange(k_.i64(0), hidden,
                  [&](Value *j) { storeReal(k_, rec_.dtype, zero, buffer(y_), yIndex(t, j)); });
    });

  int64_t rows = rec_.gates * rec_.hidden;
  Value *input = dim(rec_.input);
  k_.forRange(
      k_.i64(0), length,
      [&](Value *i) {
        Value *t = reverse ? b.CreateSub(b.CreateSub(length, k_.i64(1)), i) : i;
        Value *xRow = rec_.batchMajor ? b.CreateAdd(b.CreateMul(row, seq), t)
                                      : b.CreateAdd(b.CreateMul(t, dim(rec_.batch)), row);
        Value *xBase = b.CreateMul(xRow, input);
        emitGateProducts(
            xw_, w_, direction, input, 0, 0, rows,
            [&](Value *kk) {
              return loadReal(k_, rec_.dtype, buffer(int(x_)), b.CreateAdd(xBase, kk));
            },
            k_.elementAddress(rec_.dtype, buffer(int(x_)), xBase));
        emitGateProducts(
            hr_, r_, direction, hidden, rows, 0, rows,
            [&](Value *kk) { return loadScratch(h_, kk); }, h_);
        emitCell(direction);
        if (y_ >= 0)
          k_.forRange(k_.i64(0), hidden, [&](Value *j) {
            storeReal(k_, rec_.dtype, loadScratch(h_, j), buffer(y_), yIndex(t, j));
          });
      },
      1, "t");
  k_.forRange(k_.i64(0), hidden, [&](Value *j) {
    Value *index = stateIndex(direction, row, j);
    if (yh_ >= 0)
      storeReal(k_, rec_.dtype, loadScratch(h_, j), buffer(yh_), index);
    if (yc_ >= 0)
      storeReal(k_, rec_.dtype, loadScratch(c_, j), buffer(yc_), index);
  });
}

void RecurrentKernel::emitGateProducts(Value *out, unsigned weights, int64_t direction,
                                       Value *width, int64_t biasOffset, int64_t rowBegin,
                                       int64_t rowEnd, function_ref<Value *(Value *)> vec,
                                       Value *vecBase) {
  IRBuilder<> &b = k_.ir();
  int64_t rows = rec_.gates * rec_.hidden;
  bool vectorized = rec_.dtype == DType::F32;
  k_.forRange(
      k_.i64(rowBegin), k_.i64(rowEnd),
      [&](Value *r) {
        Value *initial = k_.constant(real_, 0.0);
        if (bias_ >= 0)
          initial = loadReal(k_, rec_.dtype, buffer(bias_),
                             b.CreateAdd(k_.i64(direction * 2 * rows + biasOffset), r));
        Value *weightRow = b.CreateMul(b.CreateAdd(k_.i64(direction * rows), r), width);
        if (vectorized) {
          Value *row = k_.elementAddress(DType::F32, k_.buffer(weights), weightRow);
          storeScratch(b.CreateFAdd(initial, emitDotF32(k_, row, vecBase, width)), out, r);
          return;
        }
        Value *sum = k_.forRangeCarried(
            k_.i64(0), width, {initial},
            [&](Value *kk, ArrayRef<Value *> acc) -> std::vector<Value *> {
              Value *wv = loadReal(k_, rec_.dtype, k_.buffer(weights), b.CreateAdd(weightRow, kk));
              return {b.CreateFAdd(acc[0], b.CreateFMul(vec(kk), wv))};
            },
            1, "k")[0];
        storeScratch(sum, out, r);
      },
      1, "gate");
}

void RecurrentKernel::emitCell(int64_t direction) {
  IRBuilder<> &b = k_.ir();
  const RecurrentActivation *act =
      rec_.activations.data() + direction * (rec_.kind == CellKind::LSTM  ? 3
                                             : rec_.kind == CellKind::GRU ? 2
                                                                          : 1);
  int64_t hs = rec_.hidden;
  Value *one = k_.constant(real_, 1.0);
  auto at = [&](Value *array, int64_t gate, Value *j) {
    return loadScratch(array, b.CreateAdd(k_.i64(gate * hs), j));
  };
  auto preActivation = [&](int64_t gate, Value *j) {
    return b.CreateFAdd(at(xw_, gate, j), at(hr_, gate, j));
  };
  if (rec_.kind == CellKind::RNN) {
    k_.forRange(k_.i64(0), k_.i64(hs), [&](Value *j) {
      storeScratch(emitActivation(k_, act[0], clipped(preActivation(0, j))), h_, j);
    });
    return;
  }
  if (rec_.kind == CellKind::GRU) {
    // Gate order z, r, h. z and r overwrite their x·W rows once read.
    k_.forRange(k_.i64(0), k_.i64(hs), [&](Value *j) {
      Value *z = emitActivation(k_, act[0], clipped(preActivation(0, j)));
      Value *reset = emitActivation(k_, act[0], clipped(preActivation(1, j)));
      storeScratch(z, xw_, j);
      storeScratch(reset, xw_, b.CreateAdd(k_.i64(hs), j));
      storeScratch(b.CreateFMul(reset, loadScratch(h_, j)), resetH_, j);
    });
    // Without linear_before_reset the candidate sees (r ⊙ h)·Rhᵀ + Rbh.
    if (!rec_.linearBeforeReset)
      emitGateProducts(
          hr_, r_, direction, k_.i64(hs), 3 * hs, 2 * hs, 3 * hs,
          [&](Value *kk) { return loadScratch(resetH_, kk); }, resetH_);
    k_.forRange(k_.i64(0), k_.i64(hs), [&](Value *j) {
      Value *z = at(xw_, 0, j), *reset = at(xw_, 1, j);
      Value *recurrent =
          rec_.linearBeforeReset ? b.CreateFMul(reset, at(hr_, 2, j)) : at(hr_, 2, j);
      Value *candidate =
          emitActivation(k_, act[1], clipped(b.CreateFAdd(at(xw_, 2, j), recurrent)));
      Value *h = loadScratch(h_, j);
      storeScratch(b.CreateFAdd(b.CreateFMul(b.CreateFSub(one, z), candidate), b.CreateFMul(z, h)),
                   h_, j);
    });
    return;
  }
  // LSTM: gate order i, o, f, c; peepholes p_i, p_o, p_f.
  k_.forRange(k_.i64(0), k_.i64(hs), [&](Value *j) {
    Value *c = loadScratch(c_, j);
    auto peephole = [&](int64_t gate, Value *pre, Value *cell) {
      if (peep_ < 0)
        return pre;
      Value *p = loadReal(k_, rec_.dtype, buffer(peep_),
                          b.CreateAdd(k_.i64((direction * 3 + gate) * hs), j));
      return b.CreateFAdd(pre, b.CreateFMul(p, cell));
    };
    Value *in = emitActivation(k_, act[0], clipped(peephole(0, preActivation(0, j), c)));
    Value *forget = rec_.inputForget
                        ? b.CreateFSub(one, in)
                        : emitActivation(k_, act[0], clipped(peephole(2, preActivation(2, j), c)));
    Value *cell = emitActivation(k_, act[1], clipped(preActivation(3, j)));
    Value *next = b.CreateFAdd(b.CreateFMul(forget, c), b.CreateFMul(in, cell));
    storeScratch(next, c_, j);
    Value *out = emitActivation(k_, act[0], clipped(peephole(1, preActivation(1, j), next)));
    storeScratch(b.CreateFMul(out, emitActivation(k_, act[2], next)), h_, j);
  });
}

template <CellKind Kind> void lowerRecurrent(LoweringContext &ctx, const Node &node) {
  Recurrence rec = readRecurrence(ctx, node, Kind);
  if (lowerPackedRecurrence(ctx, node, rec))
    return;
  RecurrentKernel kernel(ctx, node, rec);
  kernel.emit();
}

} // namespace

void registerRecurrentLowerings(LoweringTable &table) {
  table.add(OpKind::LSTM, lowerRecurrent<CellKind::LSTM>);
  table.add(OpKind::GRU, lowerRecurrent<CellKind::GRU>);
  table.add(OpKind::RNN, lowerRecurrent<CellKind::RNN>);
}

} // namespace onnxc::lower
