//===- passes/attention/FuseAttentionMatch.h - fuse-attention's matched pattern ---===//
//
// What fuse-attention finds around a Softmax and decides about it, shared by
// the files the pass is split into, one step each: the head plumbing
// readers (FuseAttentionHeads.cpp), the core matcher (FuseAttentionCore.cpp),
// the mask plan (FuseAttentionMaskPlan.cpp) and the rewrite
// (FuseAttention.cpp, whose opening comment draws the whole pattern).
// Internal to fuse-attention.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/MatchSupport.h"
#include "passes/Pass.h"
#include "passes/attention/masks/AttentionMasks.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace onnxc::attention {

/// Where a head's [b, S, h*d] tensor comes from (a ViT's packed qkv is
/// split into three such tensors by split-packed-qkv first, torch's
/// sequence-first [S, b, h*d] projections transposed by batch-first-heads).
struct Heads3d {
  Value *source = nullptr;
  int64_t heads = 0, size = 0;
};

/// A mask term between the scale and Softmax.
struct MaskTerm {
  Value *mask;
  MaskEncoding encoding;
  double fill = 0;      // Where forms only
  bool negated = false; // subtracted (scores - bias, as ALiBi is often written)
};

using match::MatchResult;
using match::MatchStatus;
using match::Rejection;

/// Peels Mul/Div by scalar constants off `value`, folding them into `scale`.
Value *stripScale(Value *value, double &scale);

/// Whether `node` is a Transpose by exactly `perm`.
bool isPerm(const Node *node, std::initializer_list<int64_t> perm);

/// Dim `i` of `shape`, when it is a constant.
std::optional<int64_t> constantDim(const Shape &shape, size_t i);

/// LLaMA's repeat_kv, x [b, g, S, d] -> Reshape(Expand(Unsqueeze(x) ->
/// [b, g, n, S, d])) -> [b, g*n, S, d]: each of x's g heads serves n
/// consecutive heads, which is the Attention op's grouping (group-repeated-kv
/// has brought the other spellings of the repeat to this form). Returns x and
/// sets `group` to n, or returns null. Checked on the inferred shapes alone:
/// a unit dim inserted next to another unit dim lays the data out the same.
Value *repeatedKvSource(Value *repeated, int64_t &group);

/// The [b, S, h*d] form of a [b, h, S, d] head tensor, if the graph split
/// heads out of one.
std::optional<Heads3d> headsSource(const Value *v4);

/// What Kᵀ [b, h, d, Skv] was made from.
struct KeyForms {
  Value *k4 = nullptr;         // [b, h, Skv, d] (or [b, g, Skv, d]), when the graph has it
  int64_t group = 1;           // query heads per K head, when repeat_kv was peeled
  Value *splitHeads = nullptr; // Reshape result [b, Skv, h, d] of perm (0,2,3,1)
  Value *repeated = nullptr;   // the repeated K, when repeat_kv was peeled
  std::optional<Heads3d> k3;
};

/// What Kᵀ was made from; a scale on the 4-D K is folded into `scale`.
KeyForms keyForms(Value *kt, double &scale);

/// The Reshape merging heads after the transposed output: its node, or null.
/// [b, h, Sq, dv] -> Transpose [0, 2, 1, 3] -> Reshape [b, Sq, h*dv].
Node *mergeHeadsRoot(const Graph &graph, const Value *o4);

/// Everything found between the score MatMul and the value MatMul.
struct CoreMatch {
  Node *scores = nullptr, *softmax = nullptr, *output = nullptr;
  Value *q = nullptr, *kt = nullptr, *v = nullptr;
  double scale = 1.0;
  std::vector<MaskTerm> masks;
  // Shape nodes reading an intermediate score tensor (a mask sized from
  // the scores): rewired to the Attention's operands' dims.
  std::vector<Node *> shapeReaders;
};

/// The scaled dot-product core anchored at `softmax`, or the Rejection
/// saying why the candidate is not one.
MatchResult<CoreMatch> matchCore(const Graph &graph, Node &softmax);

/// Mask attributes and the operand that remain after the proof.
struct MaskPlan {
  KeyBand band;
  Value *operand = nullptr; // data-dependent mask, before any Not
  bool negate = false;      // operand is a "hidden" bool: Not() it
  bool subtract = false;    // operand is a subtracted bias: Neg() it
  // The finite value the Where masks replace hidden scores by (mask_fill);
  // none when they fill -inf (the op's default meaning) or there are none.
  std::optional<double> fill;
  // The band is around the diagonal offset by a cache (kvSeq = past +
  // qSeq): the op says so only with past_key / past_value operands.
  bool pastOffset = false;
};

/// K and V as a KV cache concatenated with the new keys along the sequence
/// (GPT-2's torch.cat((past_key, key), dim=-2)).
struct CacheSplit {
  Value *pastKey = nullptr, *newKey = nullptr, *pastValue = nullptr, *newValue = nullptr;
};

/// The cache and new parts of the 4-D K and V, when both are Concat(past,
/// new) on the sequence axis with `past` keys in the cache; nullopt else.
std::optional<CacheSplit> splitCache(Value *k4, Value *v4, const Dim &past);

/// The masks as one Attention: a proven band becomes is_causal / window, at
/// most one other mask the operand, and a finite Where fill mask_fill. The
/// fused op replaces a key hidden by the band or a bool operand by the fill
/// and then adds a float operand, so the unfused chain must mean exactly
/// that: every Where fills the same value, and with a finite fill no Where
/// comes after the additive operand (which it would overwrite) and no band
/// is additive (its keys score s + v, not the fill). A fill of -inf hides
/// the same either way, so those orders fuse as before.
/// A Rejection when the masks cannot be said so; explains in `context`
/// each mask that stays an operand.
MatchResult<MaskPlan> planMasks(const CoreMatch &m, PassContext &context);

} // namespace onnxc::attention
