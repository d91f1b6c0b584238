//===- passes/AttentionMasks.h - What an attention mask hides -------------===//
//
// fuse-attention keeps a data-dependent mask (padding from an integer input)
// as the Attention op's attn_mask operand, but turns masks that only depend
// on the sequence length (causal triangles, bands) into attributes, so the
// kernel can skip masked key tiles instead of reading a mask.
//
// Such masks are built in many ways: Trilu over ConstantOfShape(-inf), a
// Slice of a stored uint8 triangle compared with 0 and fed to Where, a Slice
// of a stored additive band. Rather than match every construction, the
// mask's subgraph is evaluated with the reference evaluator at several
// sequence lengths (every symbol bound to the same n) and the pattern of
// hidden entries is read off. A subgraph that reads input data (other than
// through Shape) is data-dependent and is not probed.
//
// A probe is evidence, not proof: the lengths are 1 to 100 (a stored
// triangle is usually sliced from a table of at most a few hundred rows, and
// lengths past the table make the original graph fail to broadcast, so
// those probes are skipped rather than contradicting).
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

/// The band `mask` hides when applied to scores of shape [..., qSeq, kvSeq]
/// (qSeq and kvSeq must be the same Dim), or nullopt with `reason` set when
/// the mask depends on data, is not a band, or cannot be evaluated.
std::optional<KeyBand> probeBandMask(const Value *mask, MaskEncoding encoding, const Dim &qSeq,
                                     const Dim &kvSeq, std::string &reason);

/// Whether `value` is computed from constants and the shapes of other values
/// only, never from graph input contents.
bool dependsOnShapesOnly(const Value *value);

} // namespace onnxc
