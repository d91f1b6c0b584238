//===- runtime/generate/GeneratorRoles.h - Which inputs and outputs a decoder has -===//
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
  int32_t axis = -1;   ///< The sequence axis of both; -1: a state, fed back whole.

  bool isState() const { return axis < 0; }
};

/// A decoder input set once per source in an encoder-decoder generation:
/// from an encoder output, or the source's attention mask (ones).
struct ContextInput {
  int32_t input = -1;         ///< The decoder's input.
  int32_t encoderOutput = -1; ///< The encoder output that feeds it; -1: the source mask.
};

/// The encoder's side of an encoder-decoder generation: the source ids and
/// its mask, and what its symbols are (batch and source length).
struct EncoderRoles {
  int32_t ids = -1, mask = -1;
  /// Per symbol: true for the batch, false for the source length.
  std::vector<bool> symbolIsBatch;
};

struct GeneratorRoles {
  int32_t ids = -1, mask = -1, positions = -1; ///< Input indices; -1: none.
  /// Per-row integer inputs [batch] of a fixed-length cache (opset 24's
  /// TensorScatter and Attention): where a run's new positions go (the
  /// positions cached before it) and how many are valid after it.
  int32_t writeIndices = -1, validLengths = -1;
  int32_t logits = -1; ///< Output index.
  std::vector<CachePair> cache;
  /// -1: the caches grow by the new positions (present = past + new), or
  /// there are only states;
  /// else every present has its past's shape, a fixed length the generator
  /// sets to its capacity (0: a symbol of kind CacheLength) or that the
  /// model fixes (> 0: the capacity is that length).
  int64_t fixedLength = -1;
  std::vector<ContextInput> context; ///< Encoder-decoder only.
  /// What each symbol is set to: per symbol one of the kinds below
  /// (Context: a dim of a context input, read from it at encode; Capacity:
  /// a cache capacity, bound by the session; CacheLength: a fixed-length
  /// cache's length, set by the generator to its capacity).
  enum class SymbolKind { Batch, NewTokens, Past, Total, Context, Capacity, CacheLength };
  std::vector<SymbolKind> symbolKinds;

  bool hasCache() const { return !cache.empty(); }
  bool fixedCache() const { return hasCache() && fixedLength >= 0; }
  /// A state pair (a recurrent state, LinearAttention's or a causal
  /// convolution's): what it holds depends on every position fed, padding
  /// included, so its rows cannot sit behind left padding.
  bool hasStates() const {
    for (const CachePair &pair : cache)
      if (pair.isState())
        return true;
    return false;
  }
};

/// Finds the roles of a checked descriptor, `mapping` (see
/// onnxc_generate_options.mapping, may be empty) first. With an `encoder`,
/// the decoder's context inputs are found first: an input named like an
/// encoder output, the encoder's hidden states (a name with
/// "encoder_hidden_states", "encoder_outputs" or "memory") and the source
/// mask (a name with "mask" and "encoder", "source", "src" or "memory").
/// Returns "" or one line saying what is missing or ambiguous.
std::string findRoles(const onnxc_model_descriptor &model, const std::string &mapping,
                      GeneratorRoles &roles, const onnxc_model_descriptor *encoder = nullptr);

/// The encoder's roles: its ids and mask; any other input is refused.
std::string findEncoderRoles(const onnxc_model_descriptor &encoder, EncoderRoles &roles);

/// The symbol values for a run of `newTokens` tokens after `past` cached
/// positions, `batch` rows. Context, Capacity and CacheLength symbols keep
/// the value in `symbols`.
void bindGeneratorSymbols(const GeneratorRoles &roles, int64_t newTokens, int64_t past,
                          int64_t *symbols, int64_t batch = 1);

/// "ids 'input_ids', mask 'attention_mask', logits 'logits', 4 cache pairs".
std::string describeRoles(const onnxc_model_descriptor &model, const GeneratorRoles &roles);

} // namespace onnxc::runtime
