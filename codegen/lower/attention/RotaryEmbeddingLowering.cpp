//===- codegen/lower/attention/RotaryEmbeddingLowering.cpp - Opset-23 RotaryEmbedding -===//
//
// One task item per (batch, position, head) row of X: the first
// rotary_embedding_dim values are rotated in pairs (adjacent when
// interleaved, else the two halves) by the cos/sin cache row of the
// position, the rest are copied. With position_ids the cache is
// [max_position, half] and the row is the position id (an id outside the
// cache fails the run, as the reference rejects it); without it the cache
// is [batch, seq, half].
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/attention/AttentionLoweringInternal.h"

#include <string>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

struct RotaryShape {
  DType dtype = DType::F32;
  Dim batch, heads, seq, headSize, rotaryDim, half;
  HeadLayout layout;
  Dim cacheRows, cacheWidth; // rows: max_position (with position_ids)
  bool interleaved = false;
};

RotaryShape rotaryShape(const LoweringContext &ctx, const Node &node) {
  const onnxc::Value *x = node.operand(0), *cosCache = node.operand(1), *sinCache = node.operand(2);
  const onnxc::Value *positions = node.operand(3);
  RotaryShape r;
  r.dtype = x->dtype();
  if (!isFloat(r.dtype) || cosCache->dtype() != r.dtype || sinCache->dtype() != r.dtype)
    ctx.unsupported(node, "X, cos_cache and sin_cache must share one floating type");
  const Shape &xs = x->shape();
  if (xs.rank() == 4) {
    r.batch = xs[0], r.heads = xs[1], r.seq = xs[2], r.headSize = xs[3];
  } else if (xs.rank() == 3) {
    int64_t heads = node.getInt("num_heads", 0);
    if (heads <= 0)
      ctx.unsupported(node, "a 3-D input needs a positive num_heads attribute");
    r.batch = xs[0], r.heads = Dim(heads), r.seq = xs[1];
    r.headSize = headSizeOf(ctx, node, xs[2], heads, "X");
  } else {
    ctx.unsupported(node, "input must be 3-D or 4-D, got " + xs.str());
  }
  r.layout = headLayout(xs.rank() == 3, /*seqFirst=*/false, r.batch, r.heads, r.seq, r.headSize);

  int64_t rotary = node.getInt("rotary_embedding_dim", 0);
  r.rotaryDim = rotary == 0 ? r.headSize : Dim(rotary);
  std::optional<int64_t> rotaryConst = r.rotaryDim.constant(), size = r.headSize.constant();
  if (rotary < 0 || (rotaryConst && *rotaryConst % 2 != 0) ||
      (rotaryConst && size && *rotaryConst > *size) || (rotary > 0 && !size))
    ctx.unsupported(node, "rotary_embedding_dim " + r.rotaryDim.str() +
                              " must be even and at most the head size " + r.headSize.str());
  std::optional<Dim> half = r.rotaryDim.divideExactly(Dim(2));
  if (!half)
    ctx.unsupported(node, "rotary dim " + r.rotaryDim.str() + " is not provably even");
  r.half = *half;

  const Shape &cache = cosCache->shape();
  if (cache != sinCache->shape())
    ctx.unsupported(node, "cos_cache " + cache.str() + " and sin_cache " + sinCache->shape().str() +
                              " differ in shape");
  size_t cacheRank = positions ? 2 : 3;
  bool fits = cache.rank() == cacheRank && cache[cacheRank - 1].provablyEqual(r.half);
  if (fits && !positions)
    fits = cache[0].provablyEqual(r.batch) && cache[1].provablyEqual(r.seq);
  if (!fits)
    ctx.unsupported(node, std::string("rotary cache ") + cache.str() + " is not " +
                              (positions ? "[max_position, " : "[batch, seq, ") + r.half.str() +
                              "]");
  r.cacheRows = cache[0];
  r.cacheWidth = r.half;
  if (positions) {
    const Shape &p = positions->shape();
    if (!isInteger(positions->dtype()) || p.rank() != 2 || !p[0].provablyEqual(r.batch) ||
        !p[1].provablyEqual(r.seq))
      ctx.unsupported(node, "position_ids " + p.str() + " is not an integer [" + r.batch.str() +
                                ", " + r.seq.str() + "]");
  }
  r.interleaved = node.getInt("interleaved", 0) != 0;
  return r;
}

} // namespace

void lowerRotaryEmbedding(LoweringContext &ctx, const Node &node) {
  RotaryShape r = rotaryShape(ctx, node);
  const onnxc::Value *positionIds = node.operand(3);
  StepBuilder step = ctx.beginStep(node, "rotary_embedding");
  unsigned x = step.input(node.operand(0));
  unsigned cosCache = step.input(node.operand(1));
  unsigned sinCache = step.input(node.operand(2));
  int positions = positionIds ? int(step.input(positionIds)) : -1;
  unsigned y = step.output(node.result(0));
  if (positionIds)
    step.setFailure("a position id in '" + positionIds->name() + "' is out of range [0, " +
                    r.cacheRows.str() + ") for axis 0 of '" + node.operand(1)->name() + "'");
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  Dim rows = r.batch * r.seq * r.heads;
  auto [begin, end] = step.splitEvenly([rows](FunctionBuilder &f) { return f.dim(rows); }, 16);
  Value *half = k.dim(r.half);
  k.forRange(begin, end, [&](Value *linear) {
    std::vector<Value *> index =
        k.unflatten(linear, {k.dim(r.batch), k.dim(r.seq), k.dim(r.heads)});
    Value *base = k.offset({index[0], index[2], index[1]},
                           {k.dim(r.layout.batch), k.dim(r.layout.head), k.dim(r.layout.position)});
    Value *cacheRow = b.CreateAdd(b.CreateMul(index[0], k.dim(r.seq)), index[1]);
    if (positions >= 0) {
      Value *id = loadIndex(k, positionIds->dtype(), k.buffer(unsigned(positions)), cacheRow);
      k.failIf(b.CreateICmpUGE(id, k.dim(r.cacheRows))); // negative ids too
      cacheRow = id;
    }
    Value *cacheBase = b.CreateMul(cacheRow, k.dim(r.cacheWidth));
    k.forRange(k.i64(0), half, [&](Value *i) {
      Value *first = r.interleaved ? b.CreateMul(i, k.i64(2)) : i;
      Value *second = r.interleaved ? b.CreateAdd(first, k.i64(1)) : b.CreateAdd(i, half);
      Value *c = loadReal(k, r.dtype, k.buffer(cosCache), b.CreateAdd(cacheBase, i));
      Value *sn = loadReal(k, r.dtype, k.buffer(sinCache), b.CreateAdd(cacheBase, i));
      Value *firstIndex = b.CreateAdd(base, first), *secondIndex = b.CreateAdd(base, second);
      Value *x1 = loadReal(k, r.dtype, k.buffer(x), firstIndex);
      Value *x2 = loadReal(k, r.dtype, k.buffer(x), secondIndex);
      storeReal(k, r.dtype, b.CreateFSub(b.CreateFMul(c, x1), b.CreateFMul(sn, x2)), k.buffer(y),
                firstIndex);
      storeReal(k, r.dtype, b.CreateFAdd(b.CreateFMul(sn, x1), b.CreateFMul(c, x2)), k.buffer(y),
                secondIndex);
    });
    Type *storage = k.storageType(r.dtype);
    k.forRange(k.dim(r.rotaryDim), k.dim(r.headSize), [&](Value *d) {
      Value *index = b.CreateAdd(base, d);
      b.CreateStore(b.CreateLoad(storage, k.elementAddress(r.dtype, k.buffer(x), index)),
                    k.elementAddress(r.dtype, k.buffer(y), index));
    });
  });
  step.finish();
}

} // namespace onnxc::lower
