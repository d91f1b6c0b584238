//===- driver/LastPositionLogits.h - Logits of the last position, for generation -===//
//
// A decoder exported for generation computes logits [batch, seq, vocab] at
// every position of the prompt, and the generator reads the last one. The LM
// head is the largest matrix product of the model (GPT-2 small: 50257 x 768,
// a third of its weights), so a prompt of 512 positions spent a third of its
// prefill on 511 rows of logits nobody reads. For a model compiled for
// generation (`onnxc generate`, `onnxc serve`, `--logits=last`, a model
// folder in Python) the logits output is rewritten to [batch, 1, vocab]: the
// chain of position-wise ops that ends in it (the LM head's MatMul, a bias,
// a final softcap, the final norm and its residual add) takes the last
// position of its inputs instead, through a Slice on the sequence axis. Every
// op of the chain computes each position from that position alone, so the
// last row is what the full computation gives there; the chain stops at the
// first op that mixes positions (attention) or whose result has other uses.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <string>

namespace onnxc {

/// Rewrites the logits output of `graph` (a float output named like logits,
/// [batch, seq, vocab] with a symbolic seq and a constant vocab) to the last position only,
/// as above. Returns what it did in one line ("logits at the last position:
/// MatMul, SkipLayerNormalization take position seq - 1"), or empty when the
/// graph has no such output (nothing is changed then).
std::string keepLastPositionLogits(Graph &graph);

} // namespace onnxc
