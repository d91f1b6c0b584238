//===- tools/onnxc/BenchInputs.h - Inputs `onnxc bench` makes up ------------===//
//
// A benchmark should run any model with no flags, on inputs the model
// accepts, as OpenVINO's benchmark_app and onnxruntime's perf_test do:
// token ids within the table they index (BERT's token_type_ids: 2 rows),
// attention masks of ones, KV caches empty (past length 0), and the
// symbolic dims no --shape or --input sets at batch 1 and sequence 128. The
// report says which dims it chose and what each input holds.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "onnxc/model_abi.h"
#include "tools/onnxc/RunInputs.h"

#include <set>
#include <string>

namespace onnxc {

/// The batch and sequence lengths a symbolic dim gets when no flag sets it.
constexpr int64_t kBenchDefaultBatch = 1;
constexpr int64_t kBenchDefaultSequence = 128;

/// Adds bench's defaults to `request` for a model whose inputs `graph` has
/// (the optimized graph, or a library's signature) and whose descriptor is
/// `model`: the descriptor's index bounds, masks of ones, past length 0 for
/// every KV-cache input, batch 1 and sequence 128 for the other symbols.
/// Returns the symbols that are a KV cache's past length.
std::set<std::string> addBenchDefaults(const Graph &graph, const onnxc_model_descriptor &model,
                                       InputRequest &request);

} // namespace onnxc
