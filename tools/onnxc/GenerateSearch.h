//===- tools/onnxc/GenerateSearch.h - onnxc generate's search options and batches -===//
//
// The options of issue 30's search (penalties, min-p, stop lists,
// min-new-tokens, log-probabilities, beams) and the two loops beside the
// one-prompt loop of GenerateCommand.cpp: a batch of prompts (one output line
// per prompt) and a beam search (one line per returned sequence).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/onnxc_generate.h"
#include "tools/onnxc/CommandLine.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnxc {

/// A decimal integer in [minimum, 10^18], or UsageError naming --`option`.
int64_t integerArgument(const std::string &text, const std::string &option, int64_t minimum);
/// The number of --`option`, `fallback` when absent; UsageError when not finite.
float floatArgument(const ParsedArgs &args, const std::string &option, float fallback);
/// A comma-separated list of ids (each >= 0) given to --`option`.
std::vector<int64_t> idListText(const std::string &text, const std::string &option);

/// The search options; `stopIds` keeps the --eos-id list the options point
/// at. `genaiStops` are the folder's eos ids (used when --eos-id is absent).
void readSearchOptions(const ParsedArgs &args, bool sampling,
                       const std::vector<int64_t> &genaiStops, onnxc_generate_options &options,
                       std::vector<int64_t> &stopIds);
std::vector<OptionSpec> searchOptionSpecs();

/// The prompts of --prompt-ids-file (one comma-separated line each), or
/// empty without it.
std::vector<std::vector<int64_t>> promptFileRows(const ParsedArgs &args);

/// Runs a batch and prints one line of ids per row (with --logprobs a line
/// of log-probabilities after each); --bench prints tokens per second.
void generateBatch(onnxc_generator *generator, const std::vector<std::vector<int64_t>> &prompts,
                   const std::string &path, bool logprobs, bool bench);

/// Runs a beam search and prints one line of ids per sequence (scores on
/// stderr); --bench prints the per-step time.
void generateBeams(onnxc_generator *generator, const std::vector<int64_t> &prompt,
                   const std::string &path, bool bench);

/// With --logprobs: the token's log-probability (and --top-logprobs'
/// alternatives) of row `row` of the last step as "LOGPROB[ ID:LOGPROB...]".
std::string logprobText(onnxc_generator *generator, int64_t row, int32_t top);

} // namespace onnxc
