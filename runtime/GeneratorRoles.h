//===- runtime/GeneratorRoles.h - Which inputs and outputs a decoder has ---===//
//
// A generator feeds a model it knows only by its descriptor, so it reads the
// roles from names and shapes (onnxc_generate.h lists the rules): the token
// ids, the mask, the positions, the logits and the cache pairs, and which
// symbols are the batch, the new tokens and the cache length. Anything it
// could not set (another input, another symbol) is refused up front with a
// line naming it, rather than failing at the first run.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/model_abi.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnxc::runtime {

struct CachePair {
  int32_t input = -1;  ///< past
  int32_t output = -1; ///< present
};

struct GeneratorRoles {
  int32_t ids = -1, mask = -1, positions = -1; ///< Input indices; -1: none.
  int32_t logits = -1;                         ///< Output index.
  std::vector<CachePair> cache;
  /// What each symbol is set to: per symbol one of the kinds below.
  enum class SymbolKind { Batch, NewTokens, Past, Total };
  std::vector<SymbolKind> symbolKinds;

  bool hasCache() const { return !cache.empty(); }
};

/// Finds the roles of a checked descriptor, `mapping` (see
/// onnxc_generate_options.mapping, may be empty) first. Returns "" or one
/// line saying what is missing or ambiguous.
std::string findRoles(const onnxc_model_descriptor &model, const std::string &mapping,
                      GeneratorRoles &roles);

/// The symbol values for a run of `newTokens` tokens after `past` cached
/// positions (batch 1).
void bindGeneratorSymbols(const GeneratorRoles &roles, int64_t newTokens, int64_t past,
                          int64_t *symbols);

/// "ids 'input_ids', mask 'attention_mask', logits 'logits', 4 cache pairs".
std::string describeRoles(const onnxc_model_descriptor &model, const GeneratorRoles &roles);

} // namespace onnxc::runtime
