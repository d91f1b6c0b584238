//===- passes/attention/masks/AttentionMasks.h - What an attention mask hides ---===//
//
// fuse-attention keeps a data-dependent mask (padding from an integer input)
// as the Attention op's attn_mask operand, but turns masks that only depend
// on the sequence length (causal triangles, bands) into attributes, so the
// kernel can skip masked key tiles instead of reading a mask.
//
// Such masks are built in many ways: Trilu over ConstantOfShape(-inf), a
// Slice of a stored uint8 triangle compared with 0 and fed to Where, a Slice
// of a stored additive band, comparisons of Range positions. Rather than
// match every construction, the mask's subgraph is evaluated symbolically
// (MaskSymbolic.h: every symbol left free) and the band it hides is proven
// for every sequence length at once (MaskProof.h): the hidden predicate must
// be a function of i - j alone, which is piecewise constant with breakpoints
// the proof bounds, so evaluating it up to that bound decides it everywhere.
// A graph of one fixed length whose mask involves no symbol is evaluated
// once, concretely, at that length: that is the whole truth too.
//
// Anything not proven (an op the evaluator does not follow, a mask that
// depends on the length or on the positions separately, a band wider on one
// side) is reported with its reason, and the mask stays an operand computed
// at run time. Sampling lengths is never taken as a proof.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <cstdint>
#include <optional>
#include <string>

namespace onnxc {

/// How a mask tensor hides a score.
enum class MaskEncoding {
  Additive,         // scores + m: 0 keeps, <= -1e4 (or -inf) hides
  HiddenWhereTrue,  // Where(m, fill, scores)
  HiddenWhereFalse, // Where(m, scores, fill)
};

/// A band of visible keys: query i sees key j iff i - j <= below and
/// j - i <= above. kUnbounded means no limit on that side.
struct KeyBand {
  static constexpr int64_t kUnbounded = INT64_MAX;
  int64_t below = kUnbounded, above = kUnbounded;

  bool isEverything() const { return below == kUnbounded && above == kUnbounded; }
  KeyBand intersect(const KeyBand &o) const {
    return {below < o.below ? below : o.below, above < o.above ? above : o.above};
  }
};

/// The band `mask` hides when applied to scores of shape [..., qSeq, kvSeq],
/// proven for every value of the shape symbols; nullopt with `reason` set
/// when the mask depends on data, is not a band, or the proof does not go
/// through. When kvSeq is qSeq plus a symbolic length (a KV cache, past +
/// seq), the queries are the last qSeq positions and the band is around
/// the diagonal offset by that length (query i at position i + past), which
/// the Attention op expresses only with past_key / past_value operands.
std::optional<KeyBand> proveBandMask(const Value *mask, MaskEncoding encoding, const Dim &qSeq,
                                     const Dim &kvSeq, std::string &reason);

/// Whether `value` is computed from constants and the shapes of other values
/// only, never from graph input contents.
bool dependsOnShapesOnly(const Value *value);

} // namespace onnxc
