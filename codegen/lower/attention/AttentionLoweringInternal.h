//===- codegen/lower/attention/AttentionLoweringInternal.h - Head layouts, shapes -===//
//
// Internal to the Attention and RotaryEmbedding lowerings: where element
// (batch, head, position, i) of a per-head tensor lives in the 3-D
// [batch, seq, heads*size] or the 4-D [batch, heads, seq, size] layout, and
// the dims of an Attention node in the 4-D view.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"
#include "ir/shape/Dim.h"

#include <array>
#include <optional>

namespace onnxc::lower {

/// Element strides of the batch, head and position axes; the last axis
/// (within a head) is contiguous.
struct HeadLayout {
  Dim batch, head, position;
};

/// `batch` matters only to the sequence-first 3-D layout [seq, batch, heads*size].
inline HeadLayout headLayout(bool is3d, bool seqFirst, const Dim &batch, const Dim &heads,
                             const Dim &seq, const Dim &size) {
  if (is3d && seqFirst)
    return {heads * size, size, batch * heads * size};
  if (is3d)
    return {seq * heads * size, size, heads * size};
  return {heads * seq * size, seq * size, size};
}

/// An Attention node's dims in the 4-D view and the layouts of Q, K, V, Y.
struct AttentionShape {
  DType dtype = DType::F32;
  bool is3d = false, seqFirst = false, hasPast = false;
  Dim batch, qHeads, kvHeads, qSeq, kvSeq, past = Dim(0), total, headSize, vHeadSize;
  /// Rows per (batch, head) in the past_key / past_value buffers: `past`, or
  /// the cache capacity of a past the runtime updates in place (CachePairs.h).
  Dim pastKeyRows = Dim(0), pastValueRows = Dim(0);
  HeadLayout q, k, v, y;
};

/// Reads and checks the node's operand shapes (refusing what the kernel
/// cannot index with one clear line).
AttentionShape attentionShape(const LoweringContext &ctx, const Node &node);

/// `hidden / heads`, refused when not provably exact.
Dim headSizeOf(const LoweringContext &ctx, const Node &node, const Dim &hidden, int64_t heads,
               const char *what);

/// The `window` attribute (onnxc's own): query i sees key j only when
/// |j - (i + past)| <= window; -1 (the default) means no window.
int64_t attentionWindow(const LoweringContext &ctx, const Node &node);

/// The `mask_fill` attribute (onnxc's own): the score a key hidden by a bool
/// mask, is_causal, window or a short mask's extent takes (a float mask is
/// added to it); nullopt (the default) means -inf, the ONNX meaning.
std::optional<float> attentionMaskFill(const LoweringContext &ctx, const Node &node);

/// Whether the fused f32 kernel of FlashAttentionLowering.cpp computes
/// `node`: f32 on an AVX2+FMA target, constant head sizes, no past in the
/// 3-D form, no softcap and no qk_matmul_output read. Everything else takes the general
/// kernel of AttentionLowering.cpp.
bool canUseFlashAttention(const LoweringContext &ctx, const Node &node,
                          const AttentionShape &shape);

/// Emits the fused kernel's step that writes Y (result 0).
void emitFlashAttention(LoweringContext &ctx, const Node &node, const AttentionShape &shape);

/// Whether AmxAttentionLowering.cpp's kernel computes `node`: at
/// --precision=bf16 on an AMX-BF16 target, f32 without a past or window
/// band, softcap, masked_rows_zero or qk_matmul_output, a float mask or none
/// (mask_fill only without one), head sizes up to 256.
bool canUseAmxAttention(const LoweringContext &ctx, const Node &node, const AttentionShape &shape);
/// Emits its two steps (K and V packed to bf16, then the attention).
void emitAmxAttention(LoweringContext &ctx, const Node &node, const AttentionShape &shape);

/// The slot a kernel step reads operand `index` (Q, K or V) of `node` from:
/// its own buffer, or, when attentionReadingSplitInPlace says so, the
/// Split's packed input, with `layout` and `offset` (elements) pointing at
/// the operand's columns.
unsigned readAttentionOperand(LoweringContext &ctx, StepBuilder &step, const Node &node,
                              unsigned index, HeadLayout &layout, int64_t &offset);

/// The Attention that reads `split`'s results in place, or null. HF GPT-2
/// splits its packed [b, s, 3h] projection into Q, K and V on the last
/// axis; when the fused kernel reads all of them (operands 0-2, nothing
/// else reading them, no present outputs), it reads the projection with the
/// packed row stride and the Split emits nothing.
const Node *attentionReadingSplitInPlace(const LoweringContext &ctx, const Node &split);

/// An attn_mask in the 4-D [batch, heads, qSeq, keys] view: its shape
/// right-aligned (1 on missing axes), element strides (0 on axes of extent
/// 1, which broadcast) and its key extent (keys at or past it are masked
/// out, as in the reference).
struct MaskLayout {
  std::array<Dim, 4> dims;
  std::array<llvm::Value *, 4> strides{};
  llvm::Value *columns = nullptr;
};

/// Computes the layout of a mask of shape `shape` in the kernel's entry block.
MaskLayout attentionMaskLayout(KernelBuilder &k, const Shape &shape);

void lowerRotaryEmbedding(LoweringContext &ctx, const Node &node);
/// onnxc's AdditiveAttention (AdditiveAttentionLowering.cpp).
void lowerAdditiveAttention(LoweringContext &ctx, const Node &node);
/// LinearAttention, opset 27 (LinearAttentionLowering.cpp).
void lowerLinearAttention(LoweringContext &ctx, const Node &node);

} // namespace onnxc::lower
