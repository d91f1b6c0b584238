//===- driver/MergedDecoder.h - Optimum's merged decoder, for generation -------===//
//
// Optimum's decoder_model_merged.onnx holds two decoders under one If on a
// bool input, use_cache_branch: the one without a cache (for the prompt) and
// the one with it (for every later step). The with-cache decoder also takes
// the prompt, with an empty past (0 positions; onnxc's generator starts every
// cache that way), and gives the same logits and presents, so a model
// compiled for generation fixes use_cache_branch to true: the If becomes the
// with-cache decoder, whose past/present pairs the generator updates in
// place. A model compiled for anything else keeps the input and both
// branches.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

namespace onnxc {

/// The name of the merged decoder's branch input.
inline constexpr const char *kUseCacheBranch = "use_cache_branch";

/// Whether `graph` takes use_cache_branch: one bool element.
bool hasCacheBranchInput(const Graph &graph);

/// Builds use_cache_branch = true into `graph` (the with-cache decoder; see
/// above) when it takes that input; true when it did.
bool fixCacheBranchForGeneration(Graph &graph);

} // namespace onnxc
