//===- codegen/lower/CachePairs.h - KV caches the runtime updates in place ===//
//
// A decoder exported with a cache returns `present = Concat(past, new)`
// along the sequence axis. Compiled as written, every step copies the whole
// cache into `present`. When the proof below holds for a graph input P and
// output Q, the model declares the pair (model_abi.h's onnxc_cache_pair):
// every kernel that touches P or Q addresses them with the layout of a
// tensor whose sequence dim is a capacity symbol (one for P, one for Q; the
// runtime binds them to P's and Q's own lengths in an ordinary run), so the
// runtime may bind both to one buffer of C rows, both symbols C, and the
// Concat then writes only the new rows (it still copies P's rows when the
// two buffers differ).
//
// Opset 24 writes a fixed-length cache instead: Q = TensorScatter(P, update,
// write_indices) has P's shape, and the scatter's copy of P into Q is
// skipped when the two are one buffer, so a step writes only the update's
// rows. Its pair is declared the same way (the capacity symbols then bind
// to the one length of P and Q in an ordinary run), and that length may be
// a constant.
//
// The proof: Q is a graph output (once) computed by a Concat of P and one
// other operand, the present_key / present_value result of an Attention
// whose past_key / past_value is P, or a TensorScatter of P (operand 0);
// P's dim on that axis is a symbol (or, for a TensorScatter, a constant); Q is
// read only by 4-D Attention ops as K or V (HF LLaMA, BART, T5: the kernel
// reads the whole cache from the present) and by Shape; P is not an output
// and is read only by its writer (a Concat or TensorScatter, as the past),
// by Attention ops as past_key /
// past_value (the attention kernels take the layouts) and by Shape (which
// reads no bytes); the update and write indices of a TensorScatter are not
// P. Anything else keeps the two buffers, with a note saying
// why.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelPlan.h"
#include "ir/Graph.h"

#include <unordered_map>

namespace onnxc::lower {

/// Finds the pairs, appends their capacity symbols (input = axis = -1) and
/// pairs to `plan` (whose symbols must be bound already) and notes why the
/// other candidates were refused. Returns the layout shape of every paired
/// value: its shape with the capacity symbol on the pair's axis.
std::unordered_map<const Value *, Shape> findCachePairs(const Graph &graph, ModelPlan &plan);

} // namespace onnxc::lower
