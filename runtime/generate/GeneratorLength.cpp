//===- runtime/generate/GeneratorLength.cpp - How long a sequence the model holds -===//
#include "GeneratorLength.h"

#include "DimExpr.h"
#include "DimExprQueries.h"

#include <vector>

namespace onnxc::runtime {

namespace {

using Kind = GeneratorRoles::SymbolKind;

/// Whether every symbol of `expr` is bound by the sequence lengths alone.
bool overSequenceLengths(onnxc_dim_expr expr, const GeneratorRoles &roles) {
  for (int32_t symbol : symbolsOf(expr)) {
    if (size_t(symbol) >= roles.symbolKinds.size())
      return false;
    Kind kind = roles.symbolKinds[size_t(symbol)];
    if (kind != Kind::Batch && kind != Kind::NewTokens && kind != Kind::Past && kind != Kind::Total)
      return false;
  }
  return true;
}

/// The message of the first sequence-length assumption that breaks at the
/// step that sees `total` positions, or null. With a cache that step feeds
/// one new token after total - 1 cached ones (the prompt's step: all of them
/// after none); without, the whole sequence.
const char *brokenAssumption(const onnxc_model_descriptor &model, const GeneratorRoles &roles,
                             int64_t total, bool promptStep) {
  std::vector<int64_t> symbols(size_t(model.num_symbols), 0);
  if (roles.hasCache() && !promptStep)
    bindGeneratorSymbols(roles, 1, total - 1, symbols.data());
  else
    bindGeneratorSymbols(roles, total, 0, symbols.data());
  for (int32_t a = 0; a < model.num_assumptions; ++a) {
    const onnxc_assumption &assumption = model.assumptions[a];
    if (!overSequenceLengths(assumption.expr, roles))
      continue;
    std::optional<int64_t> value =
        evaluateDimExpr(assumption.expr, symbols.data(), model.num_symbols);
    bool holds = value && (assumption.kind == ONNXC_ASSUME_ZERO ? *value == 0 : *value >= 0);
    if (!holds)
      return assumption.message ? assumption.message : "a shape assumption of the model";
  }
  return nullptr;
}

} // namespace

std::string checkSequenceLength(const onnxc_model_descriptor &model, const GeneratorRoles &roles,
                                int64_t promptLength, int64_t newTokens, int64_t capacity) {
  // The generator lays its buffers (and an in-place cache) out for
  // `capacity` positions, and the session checks the model's bounds at it.
  if (capacity <= promptLength || brokenAssumption(model, roles, promptLength, true))
    return ""; // the prompt's own step reports it, naming the inputs
  const char *broken = brokenAssumption(model, roles, capacity, false);
  if (!broken)
    return "";
  // The bounds only grow with the length: the longest that holds is found
  // by bisection between the prompt (holds) and the capacity (breaks).
  int64_t holds = promptLength, breaks = capacity;
  while (breaks - holds > 1) {
    int64_t middle = holds + (breaks - holds) / 2;
    (brokenAssumption(model, roles, middle, false) ? breaks : holds) = middle;
  }
  std::string limit = "the model holds " + std::to_string(holds) + " positions (" + broken + ")";
  if (newTokens < 0)
    return "the capacity of " + std::to_string(capacity) + " positions is more than " + limit +
           "; lower the capacity option to at most " + std::to_string(holds);
  return "the prompt's " + std::to_string(promptLength) + " tokens and max_new_tokens " +
         std::to_string(newTokens) + " need " + std::to_string(capacity) + " positions, but " +
         limit + "; at most " + std::to_string(holds - promptLength) + " new tokens fit";
}

} // namespace onnxc::runtime
