//===- passes/attention/masks/MaskProof.h - The band a symbolic mask hides, at every length ==//
//
// Decides, for a mask computed from shapes (MaskSymbolic.h) and applied to
// scores [.., seq, seq], which keys it hides for every value of seq at once:
//
//  1. Its query and key axes are bound to i and j, unit axes to 0; leading
//     axes that are not unit must not occur (the mask may not vary over
//     batch or heads).
//  2. Every integer leaf must then be c*(i - j) + k with constant c and k:
//     no shape symbol (the mask would depend on the length) and no i or j
//     alone (it would depend on the positions, not only their distance
//     d = i - j). A stored table read at (i + a, j + b) is tabulated over
//     its whole extent as a function of d (each diagonal must be uniform);
//     past the table, the original graph fails, so those d are "undefined".
//     The hidden predicate is now a function H(d), the same at every length.
//  3. Every integer node is bounded over |d| < 2^31 (a longer sequence
//     would need scores of 2^62 elements) and must fit its dtype, so exact
//     integers agree with the graph's wrapping arithmetic.
//  4. On each side, every node is shown to be eventually affine (integers)
//     or constant (everything else) as |d| grows, with the distance past
//     which that holds: comparisons, Abs, Min and Max of affine forms flip
//     at most once, at a point fixed by their coefficients. Anything else
//     (a product of positions, an inexact division) is not provable.
//  5. H is evaluated at every d within that distance; beyond it, H is
//     constant. The visible set must be an interval around d = 0, which
//     gives the KeyBand exactly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/attention/masks/AttentionMasks.h"
#include "passes/attention/masks/MaskSymbolic.h"

namespace onnxc::mask {

/// The band `mask` hides when applied to scores of shape [.., seq, seq],
/// for every value of the symbols; throws NotProvable.
KeyBand proveBand(const SymbolicTensor &mask, MaskEncoding encoding, const Dim &seq);
/// The same for scores [.., qSeq, kvSeq] whose queries are the last qSeq of
/// kvSeq positions (a KV cache of kvSeq - qSeq keys before them): the band
/// is around the diagonal offset by kvSeq - qSeq (query i is at position
/// i + kvSeq - qSeq).
KeyBand proveBand(const SymbolicTensor &mask, MaskEncoding encoding, const Dim &qSeq,
                  const Dim &kvSeq);

} // namespace onnxc::mask
