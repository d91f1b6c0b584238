//===- codegen/lower/attention/LinearAttentionLowering.cpp - LinearAttention -===//
//
// LinearAttention (ir/eval/LinearAttentionKernels.cpp is its meaning) as one
// kernel. The state's columns (its d_v axis) never mix: every rule reads and
// writes column m of S from column m alone (the decay scales rows, S^T k and
// q^T S are per column, the update adds k u[m]). So the state is cut into
// blocks of W columns, W = 8 x (1, 2 or 4) lanes, each a d_k x W stack array
// (8 KiB at d_k = 128, W = 16: it stays in L1), and each block runs every
// time step in order:
//
//   gated:  e = exp(decay_t)            (per head: one scalar; per key: d_k, vector exp)
//   delta:  pass 1, over rows d: S[d] *= e[d]; r += S[d] k[d]
//           u = beta_t (v_t - r)                       else u = v_t
//   pass 2, over rows d: S[d] = S[d] (* e[d]) + k[d] u; o_h += q_h[d] S[d]
//   o_h = scale * o_h                  for the query heads h of the KV head
//
// where every product is one <8 x float> FMA along the columns, k[d], q_h[d]
// and e[d] broadcast from memory. The KV head's query heads (GQA) all read
// the block pass 2 has just written, up to 8 accumulators at a time (more
// heads take further read-only passes).
//
// A task is (batch row, KV head, group of up to 64 columns' blocks), split
// across the runtime's threads. Its steps run in chunks of about 192 KiB of
// input rows: each block of the group takes the chunk's steps in turn, so
// the rows come from L3/DRAM once per chunk and from L2 for the other
// blocks (a task per block read the 8 KiB-strided rows once per block).
//
// Arithmetic is f32 whatever the operands' type (f16/bf16 are converted as
// they are read). Summation order: o_h[m] sums d = 0, 1, ..., d_k - 1 in
// order, one FMA per term; r[m] = (S^T k)[m] sums four interleaved partial
// sums (d mod 4) added as (p0 + p1) + (p2 + p3). The time steps run in
// order, the state rounded to f32 after each, as the spec's recurrence
// says; there is no chunk-parallel (WY) form (chunk_size is ignored, as the
// spec allows), so a prefill costs T sequential steps.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/attention/AttentionLoweringInternal.h"
#include "codegen/lower/attention/FlashVectorIR.h"
#include "ir/LinearAttentionAttributes.h"

#include "llvm/IR/Constants.h"

#include <algorithm>
#include <string>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

constexpr int64_t kLanes = FlashVectorIR::kAvx2Width;
/// Stack scratch of one task (the state block and the staged rows).
constexpr int64_t kMaxScratchBytes = 128 * 1024;
/// Query heads whose accumulators one pass over the block keeps in registers.
constexpr int64_t kRegisterVectors = 8;
/// Interleaved partial sums of S^T k (an FMA's latency is 4 cycles).
constexpr int64_t kPartialSums = 4;
/// Columns of one task: 64 (four 16-column blocks, 32 KiB of state at d_k =
/// 128): a task reads the query and key rows of its steps once per chunk
/// for all of them, while a task per block read them once per block.
constexpr int64_t kTaskColumns = 64;
/// The input rows of a chunk of steps, which the task's blocks read in turn
/// (they stay in L2: 512 KiB on Zen 3).
constexpr int64_t kChunkBytes = 192 * 1024;

/// What the kernel is specialized to: the constant head sizes and counts
/// and the form of the optional operands.
struct LinearShape {
  LinearAttentionAttributes attrs;
  Dim batch, steps;
  int64_t keySize = 0, valueSize = 0, group = 1;
  /// Vectors per column block (W = vectors * kLanes).
  int64_t vectors = 1;
  bool perKeyDecay = false, perHeadBeta = false;
  DType type = DType::F32, pastType = DType::F32, presentType = DType::F32;
  /// Column blocks per task, and time steps per chunk (see emitTask).
  int64_t blocksPerTask = 1, chunkSteps = 1;
  int64_t width() const { return vectors * kLanes; }
  int64_t blocks() const { return (valueSize + width() - 1) / width(); }
  int64_t taskGroups() const { return (blocks() + blocksPerTask - 1) / blocksPerTask; }
};

int64_t constantDim(const LoweringContext &ctx, const Node &node, const Dim &dim,
                    const char *what) {
  std::optional<int64_t> value = dim.constant();
  if (!value)
    ctx.unsupported(node, std::string("linear attention needs a constant ") + what);
  return *value;
}

/// Float elements of stack scratch a task needs for `shape`.
int64_t scratchFloats(const LinearShape &s) {
  // The task's state blocks, one staged column row.
  int64_t floats = s.blocksPerTask * s.keySize * s.width() + s.width();
  if (s.type != DType::F32)
    floats += s.keySize * (1 + s.group); // k and the group's q rows
  if (s.perKeyDecay)
    floats += s.keySize;
  return floats;
}

LinearShape linearShape(const LoweringContext &ctx, const Node &node) {
  LinearShape s;
  s.attrs = linearAttentionAttributes(node);
  s.type = node.operand(kLinearQuery)->dtype();
  const onnxc::Value *past = node.operand(kLinearPastState);
  s.pastType = past ? past->dtype() : s.type;
  s.presentType = node.numResults() > 1 ? node.result(1)->dtype() : s.type;
  for (DType type : {s.type, s.pastType, s.presentType})
    if (!isLinearAttentionType(type))
      ctx.unsupported(node, "linear attention computes on float32, float16 or bfloat16 only");
  const Shape &q = node.operand(kLinearQuery)->shape(), &v = node.operand(kLinearValue)->shape();
  if (!q.isRanked() || !v.isRanked() || q.rank() != 3 || v.rank() != 3)
    ctx.unsupported(node, "linear attention operands of unknown rank");
  s.batch = q[0], s.steps = q[1];
  s.keySize = constantDim(ctx, node, q[2], "query hidden size") / s.attrs.qHeads;
  s.valueSize = constantDim(ctx, node, v[2], "value hidden size") / s.attrs.kvHeads;
  s.group = s.attrs.groupSize();
  if (const onnxc::Value *decay = node.operand(kLinearDecay))
    s.perKeyDecay = constantDim(ctx, node, decay->shape()[2], "decay size") != s.attrs.kvHeads;
  if (const onnxc::Value *beta = node.operand(kLinearBeta))
    s.perHeadBeta = constantDim(ctx, node, beta->shape()[2], "beta size") != 1;
  // Wider blocks where few query heads leave registers for them.
  s.vectors = s.group == 1 ? 4 : s.group <= 4 ? 2 : 1;
  while (s.vectors > 1 && (s.vectors - 1) * kLanes >= s.valueSize)
    s.vectors /= 2; // no block wider than the state
  while (s.vectors > 1 && scratchFloats(s) * 4 > kMaxScratchBytes)
    s.vectors /= 2;
  if (scratchFloats(s) * 4 > kMaxScratchBytes)
    ctx.unsupported(node, "linear attention head size d_k = " + std::to_string(s.keySize) +
                              " needs more stack scratch than the kernel allows");
  s.blocksPerTask = std::min(s.blocks(), std::max<int64_t>(1, kTaskColumns / s.width()));
  while (s.blocksPerTask > 1 && scratchFloats(s) * 4 > kMaxScratchBytes)
    --s.blocksPerTask;
  int64_t rowBytes = int64_t(dtypeSize(s.type)) *
                     ((s.group + 1 + (s.perKeyDecay ? 1 : 0)) * s.keySize + s.valueSize + 2);
  s.chunkSteps = std::clamp<int64_t>(kChunkBytes / rowBytes, 4, 256);
  return s;
}

/// A row of f32 values broadcast one at a time: an operand's buffer read in
/// place (f32) or a stack copy of it.
struct Row {
  Value *base = nullptr, *offset = nullptr;
};

class LinearAttentionKernel {
public:
  LinearAttentionKernel(LoweringContext &ctx, const Node &node);
  void emit();

private:
  Value *dim(const Dim &d) { return k_.dim(d); }
  Value *i64(int64_t v) { return k_.i64(v); }
  Value *stateAt(Value *row, int64_t vector);

  void emitTask(Value *task);
  /// Points state_, column_, columns_ and masks_ at block `block` of the task.
  void selectBlock(Value *block);
  void transferState(Value *blocks, bool toPresent);
  void emitStep(Value *t);
  /// The W columns from `offset` of a `type` array (lanes past the block's
  /// columns read as 0), or stored there (lanes past them left alone).
  FlashVectorIR::Values loadColumns(DType type, Value *base, Value *offset);
  void storeColumns(ArrayRef<Value *> values, DType type, Value *base, Value *offset);
  /// `count` elements of operand `slot` from `offset`, as f32 in place or in `stage`.
  Row stageRow(unsigned slot, Value *offset, int64_t count, Value *stage);
  /// exp of the step's decay: the per-key row in decayStage_, or one scalar.
  Value *decayFactors(Value *offset);
  FlashVectorIR::Values retrieve(Row key, Value *headFactor);
  FlashVectorIR::Values update(Row key, Value *headFactor, ArrayRef<Value *> u, Row query,
                               int64_t heads);
  FlashVectorIR::Values read(Row query, int64_t firstHead, int64_t heads);
  Value *rowFactor(Value *headFactor, Value *d);
  void storeOutputs(ArrayRef<Value *> acc, int64_t firstHead, int64_t heads, Value *offset);

  const Node &node_;
  LinearShape s_;
  StepBuilder step_;
  KernelBuilder &k_;
  FlashVectorIR vec_;
  unsigned query_ = 0, key_ = 0, value_ = 0, output_ = 0;
  int past_ = -1, decay_ = -1, beta_ = -1, present_ = -1;
  Value *state_ = nullptr, *columnStage_ = nullptr, *keyStage_ = nullptr, *queryStage_ = nullptr,
        *decayStage_ = nullptr;
  // The task being emitted: batch row, KV head, first column, lane masks.
  Value *stateBlocks_ = nullptr, *firstBlock_ = nullptr;
  Value *batch_ = nullptr, *head_ = nullptr, *column_ = nullptr, *columns_ = nullptr;
  std::vector<Value *> masks_;
};

LinearAttentionKernel::LinearAttentionKernel(LoweringContext &ctx, const Node &node)
    : node_(node), s_(linearShape(ctx, node)), step_(ctx.beginStep(node, "linear_attention")),
      k_(step_.kernel()), vec_(k_.ir()) {
  query_ = step_.input(node.operand(kLinearQuery));
  key_ = step_.input(node.operand(kLinearKey));
  value_ = step_.input(node.operand(kLinearValue));
  if (const onnxc::Value *past = node.operand(kLinearPastState))
    past_ = int(step_.input(past));
  if (const onnxc::Value *decay = node.operand(kLinearDecay))
    decay_ = int(step_.input(decay));
  if (const onnxc::Value *beta = node.operand(kLinearBeta))
    beta_ = int(step_.input(beta));
  output_ = step_.output(node.result(0));
  if (node.numResults() > 1 && isNeeded(ctx, node.result(1)))
    present_ = int(step_.output(node.result(1)));
}

Value *LinearAttentionKernel::stateAt(Value *row, int64_t vector) {
  IRBuilder<> &b = k_.ir();
  return b.CreateAdd(b.CreateMul(row, i64(s_.width())), i64(vector * kLanes));
}

FlashVectorIR::Values LinearAttentionKernel::loadColumns(DType type, Value *base, Value *offset) {
  IRBuilder<> &b = k_.ir();
  FlashVectorIR::Values values;
  if (type == DType::F32) {
    for (int64_t i = 0; i < s_.vectors; ++i) {
      Value *address = b.CreateGEP(b.getFloatTy(), base, b.CreateAdd(offset, i64(i * kLanes)));
      values.push_back(
          b.CreateMaskedLoad(vec_.type(), address, Align(4), masks_[size_t(i)], vec_.splat(0)));
    }
    return values;
  }
  for (int64_t i = 0; i < s_.vectors; ++i)
    vec_.store(vec_.splat(0), columnStage_, i64(i * kLanes));
  k_.forRange(i64(0), columns_, [&](Value *c) {
    Value *x = k_.loadElement(type, base, b.CreateAdd(offset, c));
    k_.storeElement(DType::F32, x, columnStage_, c);
  });
  for (int64_t i = 0; i < s_.vectors; ++i)
    values.push_back(vec_.load(columnStage_, i64(i * kLanes)));
  return values;
}

void LinearAttentionKernel::storeColumns(ArrayRef<Value *> values, DType type, Value *base,
                                         Value *offset) {
  IRBuilder<> &b = k_.ir();
  if (type == DType::F32) {
    for (int64_t i = 0; i < s_.vectors; ++i) {
      Value *address = b.CreateGEP(b.getFloatTy(), base, b.CreateAdd(offset, i64(i * kLanes)));
      b.CreateMaskedStore(values[size_t(i)], address, Align(4), masks_[size_t(i)]);
    }
    return;
  }
  for (int64_t i = 0; i < s_.vectors; ++i)
    vec_.store(values[size_t(i)], columnStage_, i64(i * kLanes));
  k_.forRange(i64(0), columns_, [&](Value *c) {
    Value *x = k_.loadElement(DType::F32, columnStage_, c);
    k_.storeElement(type, x, base, b.CreateAdd(offset, c));
  });
}

Row LinearAttentionKernel::stageRow(unsigned slot, Value *offset, int64_t count, Value *stage) {
  if (s_.type == DType::F32)
    return {k_.buffer(slot), offset};
  IRBuilder<> &b = k_.ir();
  k_.forRange(i64(0), i64(count), [&](Value *d) {
    Value *x = k_.loadElement(s_.type, k_.buffer(slot), b.CreateAdd(offset, d));
    k_.storeElement(DType::F32, x, stage, d);
  });
  return {stage, i64(0)};
}

Value *LinearAttentionKernel::decayFactors(Value *offset) {
  IRBuilder<> &b = k_.ir();
  Value *decay = k_.buffer(unsigned(decay_));
  if (!s_.perKeyDecay)
    return vmath::emitExp(b, k_.loadElement(s_.type, decay, offset));
  int64_t vectorEnd = s_.type == DType::F32 ? s_.keySize / kLanes * kLanes : 0;
  vec_.loop(i64(0), i64(vectorEnd), kLanes, [&](Value *d) {
    Value *g = vec_.loadUnaligned(decay, b.CreateAdd(offset, d));
    vec_.store(vmath::emitExp(b, g), decayStage_, d);
  });
  k_.forRange(i64(vectorEnd), i64(s_.keySize), [&](Value *d) {
    Value *g = k_.loadElement(s_.type, decay, b.CreateAdd(offset, d));
    k_.storeElement(DType::F32, vmath::emitExp(b, g), decayStage_, d);
  });
  return nullptr;
}

/// The decay of row `d`, broadcast: the per-key factor or the head's.
Value *LinearAttentionKernel::rowFactor(Value *headFactor, Value *d) {
  return headFactor ? k_.ir().CreateVectorSplat(kLanes, headFactor)
                    : vec_.broadcast(decayStage_, d);
}

FlashVectorIR::Values LinearAttentionKernel::retrieve(Row key, Value *headFactor) {
  IRBuilder<> &b = k_.ir();
  const int64_t vectors = s_.vectors, unrolledEnd = s_.keySize / kPartialSums * kPartialSums;
  auto term = [&](Value *d, Value *sum, int64_t i) {
    Value *index = stateAt(d, i);
    Value *row = vec_.load(state_, index);
    if (s_.attrs.gated) {
      row = b.CreateFMul(row, rowFactor(headFactor, d));
      vec_.store(row, state_, index);
    }
    return vec_.fma(row, vec_.broadcast(key.base, b.CreateAdd(key.offset, d)), sum);
  };
  FlashVectorIR::Values zeros(size_t(kPartialSums * vectors), vec_.splat(0));
  FlashVectorIR::Values sums = vec_.loop(
      i64(0), i64(unrolledEnd), kPartialSums, zeros, [&](Value *d, ArrayRef<Value *> carried) {
        FlashVectorIR::Values next(carried.begin(), carried.end());
        for (int64_t p = 0; p < kPartialSums; ++p)
          for (int64_t i = 0; i < vectors; ++i)
            next[size_t(p * vectors + i)] =
                term(b.CreateAdd(d, i64(p)), carried[size_t(p * vectors + i)], i);
        return next;
      });
  FlashVectorIR::Values tail(sums.begin(), sums.begin() + vectors);
  tail = vec_.loop(i64(unrolledEnd), i64(s_.keySize), 1, tail,
                   [&](Value *d, ArrayRef<Value *> carried) {
                     FlashVectorIR::Values next;
                     for (int64_t i = 0; i < vectors; ++i)
                       next.push_back(term(d, carried[size_t(i)], i));
                     return next;
                   });
  FlashVectorIR::Values r;
  for (int64_t i = 0; i < vectors; ++i)
    r.push_back(
        b.CreateFAdd(b.CreateFAdd(tail[size_t(i)], sums[size_t(vectors + i)]),
                     b.CreateFAdd(sums[size_t(2 * vectors + i)], sums[size_t(3 * vectors + i)])));
  return r;
}

FlashVectorIR::Values LinearAttentionKernel::update(Row key, Value *headFactor, ArrayRef<Value *> u,
                                                    Row query, int64_t heads) {
  IRBuilder<> &b = k_.ir();
  const int64_t vectors = s_.vectors;
  bool decayHere = s_.attrs.gated && !s_.attrs.delta; // delta decays in retrieve()
  FlashVectorIR::Values zeros(size_t(heads * vectors), vec_.splat(0));
  return vec_.loop(i64(0), i64(s_.keySize), 1, zeros, [&](Value *d, ArrayRef<Value *> acc) {
    Value *kd = vec_.broadcast(key.base, b.CreateAdd(key.offset, d));
    Value *factor = decayHere ? rowFactor(headFactor, d) : nullptr;
    FlashVectorIR::Values q, next(acc.begin(), acc.end());
    for (int64_t h = 0; h < heads; ++h)
      q.push_back(vec_.broadcast(query.base,
                                 b.CreateAdd(b.CreateAdd(query.offset, i64(h * s_.keySize)), d)));
    for (int64_t i = 0; i < vectors; ++i) {
      Value *index = stateAt(d, i);
      Value *row = vec_.load(state_, index);
      if (factor)
        row = b.CreateFMul(row, factor);
      row = vec_.fma(kd, u[size_t(i)], row);
      vec_.store(row, state_, index);
      for (int64_t h = 0; h < heads; ++h)
        next[size_t(h * vectors + i)] = vec_.fma(q[size_t(h)], row, acc[size_t(h * vectors + i)]);
    }
    return next;
  });
}

FlashVectorIR::Values LinearAttentionKernel::read(Row query, int64_t firstHead, int64_t heads) {
  IRBuilder<> &b = k_.ir();
  const int64_t vectors = s_.vectors;
  Value *first = b.CreateAdd(query.offset, i64(firstHead * s_.keySize));
  FlashVectorIR::Values zeros(size_t(heads * vectors), vec_.splat(0));
  return vec_.loop(i64(0), i64(s_.keySize), 1, zeros, [&](Value *d, ArrayRef<Value *> acc) {
    FlashVectorIR::Values next(acc.begin(), acc.end());
    for (int64_t h = 0; h < heads; ++h) {
      Value *q =
          vec_.broadcast(query.base, b.CreateAdd(b.CreateAdd(first, i64(h * s_.keySize)), d));
      for (int64_t i = 0; i < vectors; ++i)
        next[size_t(h * vectors + i)] =
            vec_.fma(q, vec_.load(state_, stateAt(d, i)), acc[size_t(h * vectors + i)]);
    }
    return next;
  });
}

/// Writes scale * acc for `heads` query heads from `firstHead` of the group;
/// `offset` is the group's first output element of this step and block.
void LinearAttentionKernel::storeOutputs(ArrayRef<Value *> acc, int64_t firstHead, int64_t heads,
                                         Value *offset) {
  IRBuilder<> &b = k_.ir();
  Value *scale = vec_.splat(s_.attrs.scaleFor(s_.keySize));
  for (int64_t h = 0; h < heads; ++h) {
    FlashVectorIR::Values scaled;
    for (int64_t i = 0; i < s_.vectors; ++i)
      scaled.push_back(b.CreateFMul(acc[size_t(h * s_.vectors + i)], scale));
    Value *at = b.CreateAdd(offset, i64((firstHead + h) * s_.valueSize));
    storeColumns(scaled, s_.type, k_.buffer(output_), at);
  }
}

void LinearAttentionKernel::emitStep(Value *t) {
  IRBuilder<> &b = k_.ir();
  const int64_t dk = s_.keySize, dv = s_.valueSize, group = s_.group;
  Value *qHeads = i64(s_.attrs.qHeads), *kvHeads = i64(s_.attrs.kvHeads);
  Value *bt = b.CreateAdd(b.CreateMul(batch_, dim(s_.steps)), t);
  Value *kvRow = b.CreateAdd(b.CreateMul(bt, kvHeads), head_); // (b, t, j)
  Value *qRow = b.CreateAdd(b.CreateMul(bt, qHeads), b.CreateMul(head_, i64(group)));
  Row key = stageRow(key_, b.CreateMul(kvRow, i64(dk)), dk, keyStage_);
  Row query = stageRow(query_, b.CreateMul(qRow, i64(dk)), group * dk, queryStage_);
  Value *headFactor = nullptr;
  if (s_.attrs.gated)
    headFactor = decayFactors(b.CreateMul(kvRow, i64(s_.perKeyDecay ? dk : 1)));
  FlashVectorIR::Values u =
      loadColumns(s_.type, k_.buffer(value_), b.CreateAdd(b.CreateMul(kvRow, i64(dv)), column_));
  if (s_.attrs.delta) {
    FlashVectorIR::Values r = retrieve(key, headFactor);
    Value *betaAt = s_.perHeadBeta ? kvRow : bt;
    Value *rate =
        b.CreateVectorSplat(kLanes, k_.loadElement(s_.type, k_.buffer(unsigned(beta_)), betaAt));
    for (size_t i = 0; i < u.size(); ++i)
      u[i] = b.CreateFMul(rate, b.CreateFSub(u[i], r[i]));
  }
  Value *outAt = b.CreateAdd(b.CreateMul(qRow, i64(dv)), column_);
  int64_t perPass = std::max<int64_t>(1, kRegisterVectors / s_.vectors);
  int64_t heads = std::min(group, perPass);
  storeOutputs(update(key, headFactor, u, query, heads), 0, heads, outAt);
  for (int64_t first = heads; first < group; first += perPass) {
    int64_t count = std::min(perPass, group - first);
    storeOutputs(read(query, first, count), first, count, outAt);
  }
}

void LinearAttentionKernel::selectBlock(Value *block) {
  IRBuilder<> &b = k_.ir();
  state_ =
      b.CreateGEP(b.getFloatTy(), stateBlocks_, b.CreateMul(block, i64(s_.keySize * s_.width())));
  column_ = b.CreateMul(b.CreateAdd(firstBlock_, block), i64(s_.width()));
  columns_ = k_.min(b.CreateSub(i64(s_.valueSize), column_), i64(s_.width()));
  masks_.clear();
  for (int64_t i = 0; i < s_.vectors; ++i) {
    SmallVector<Constant *, 8> lanes;
    for (int64_t lane = 0; lane < kLanes; ++lane)
      lanes.push_back(b.getInt64(i * kLanes + lane));
    masks_.push_back(
        b.CreateICmpSLT(ConstantVector::get(lanes), b.CreateVectorSplat(kLanes, columns_)));
  }
}

/// Copies the past (or zeros) into the task's state blocks, or the blocks
/// into the present.
void LinearAttentionKernel::transferState(Value *blocks, bool toPresent) {
  IRBuilder<> &b = k_.ir();
  Value *stateRow =
      b.CreateMul(b.CreateAdd(b.CreateMul(batch_, i64(s_.attrs.kvHeads)), head_), i64(s_.keySize));
  k_.forRange(i64(0), blocks, [&](Value *block) {
    selectBlock(block);
    k_.forRange(i64(0), i64(s_.keySize), [&](Value *d) {
      Value *offset =
          b.CreateAdd(b.CreateMul(b.CreateAdd(stateRow, d), i64(s_.valueSize)), column_);
      FlashVectorIR::Values row;
      if (toPresent) {
        for (int64_t i = 0; i < s_.vectors; ++i)
          row.push_back(vec_.load(state_, stateAt(d, i)));
        storeColumns(row, s_.presentType, k_.buffer(unsigned(present_)), offset);
        return;
      }
      if (past_ >= 0)
        row = loadColumns(s_.pastType, k_.buffer(unsigned(past_)), offset);
      else
        row.assign(size_t(s_.vectors), vec_.splat(0));
      for (int64_t i = 0; i < s_.vectors; ++i)
        vec_.store(row[size_t(i)], state_, stateAt(d, i));
    });
  });
}

/// A task is a (batch row, KV head, group of column blocks). Its steps run
/// in chunks: every block of the group takes the chunk's steps in turn, so
/// the chunk's input rows come from memory once and from L2 after that,
/// and each block's state stays in L1 for the whole chunk.
void LinearAttentionKernel::emitTask(Value *task) {
  IRBuilder<> &b = k_.ir();
  std::vector<Value *> index =
      k_.unflatten(task, {dim(s_.batch), i64(s_.attrs.kvHeads), i64(s_.taskGroups())});
  batch_ = index[0], head_ = index[1];
  firstBlock_ = b.CreateMul(index[2], i64(s_.blocksPerTask));
  Value *blocks = k_.min(b.CreateSub(i64(s_.blocks()), firstBlock_), i64(s_.blocksPerTask));
  transferState(blocks, /*toPresent=*/false);
  Value *steps = dim(s_.steps);
  k_.forRange(
      i64(0), steps,
      [&](Value *chunk) {
        Value *chunkEnd = k_.min(b.CreateAdd(chunk, i64(s_.chunkSteps)), steps);
        k_.forRange(i64(0), blocks, [&](Value *block) {
          selectBlock(block);
          k_.forRange(
              chunk, chunkEnd, [&](Value *t) { emitStep(t); }, 1, "t");
        });
      },
      s_.chunkSteps, "chunk");
  if (present_ >= 0)
    transferState(blocks, /*toPresent=*/true);
}

void LinearAttentionKernel::emit() {
  Type *f32 = k_.ir().getFloatTy();
  stateBlocks_ = stackArray(k_, f32, s_.blocksPerTask * s_.keySize * s_.width(), "linear_state");
  columnStage_ = stackArray(k_, f32, s_.width(), "column_stage");
  if (s_.type != DType::F32) {
    keyStage_ = stackArray(k_, f32, s_.keySize, "key_stage");
    queryStage_ = stackArray(k_, f32, s_.keySize * s_.group, "query_stage");
  }
  if (s_.perKeyDecay)
    decayStage_ = stackArray(k_, f32, s_.keySize, "decay_stage");
  Dim batch = s_.batch;
  int64_t perBatch = s_.attrs.kvHeads * s_.taskGroups();
  auto [begin, end] = step_.splitEvenly(
      [batch, perBatch](FunctionBuilder &f) {
        return f.ir().CreateMul(f.dim(batch), f.i64(perBatch));
      },
      1);
  k_.forRange(
      begin, end, [&](Value *task) { emitTask(task); }, 1, "task");
  step_.finish();
}

} // namespace

void lowerLinearAttention(LoweringContext &ctx, const Node &node) {
  LinearAttentionKernel kernel(ctx, node);
  kernel.emit();
}

} // namespace onnxc::lower
