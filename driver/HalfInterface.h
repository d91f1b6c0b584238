//===- driver/HalfInterface.h - f32 inputs and outputs for a half model's generator -===//
//
// widen-half-precision computes an f16/bf16 model in f32 but keeps its
// inputs and outputs half: they are the library's ABI. A decoder compiled
// for generation (`onnxc generate`, `onnxc serve`, `--logits=last`, a model
// folder in Python) has one reader of that ABI, the generator, which reads
// f32 logits and hands each step's present caches back as the next step's
// pasts. There the half interface only costs: a rounding and a widening of
// the whole cache at every step, and the Casts between a past and its
// present keep the cache from being updated in place
// (codegen/lower/CachePairs.h). So such a model's half inputs and outputs
// become f32: the caches stay f32 from step to step (one rounding fewer per
// step than the reference, as everywhere in a widened model) and the logits
// are the f32 values the last op computed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <string>

namespace onnxc {

/// Makes every f16/bf16 graph input and output of `graph` f32. A widening
/// Cast after an input and a rounding Cast before an output (what
/// widen-half-precision leaves) go; any other reader of a half input reads
/// it rounded to its half type, and any other half output is widened, so
/// the graph computes what it did on the values it can now be given.
/// Returns what it did in one line ("f32 interface: 4 inputs and 5 outputs
/// were f16"), or empty when the graph has no half input or output.
std::string widenHalfInterface(Graph &graph);

} // namespace onnxc
