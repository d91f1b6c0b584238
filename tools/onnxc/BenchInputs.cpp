//===- tools/onnxc/BenchInputs.cpp - Inputs `onnxc bench` makes up ----------===//
#include "tools/onnxc/BenchInputs.h"

#include <algorithm>
#include <cctype>

namespace onnxc {

namespace {

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

/// A symbol that counts sequences, not positions: named so ("batch",
/// "batch_size", "N"), or, unnamed, the leading dim of an input.
bool isBatchSymbol(const std::string &symbol, size_t axis) {
  std::string name = lowercase(symbol);
  if (name.find("batch") != std::string::npos || name == "n" || name == "b")
    return true;
  bool sequenceNamed =
      name.find("seq") != std::string::npos || name.find("len") != std::string::npos ||
      name.find("past") != std::string::npos || name.find("token") != std::string::npos;
  return axis == 0 && !sequenceNamed;
}

/// Whether input `index` is a KV cache's past: a cache pair's input, or named
/// like one (past_key_values.0.key, past_key_0, past0), as the generator
/// guesses (onnxc_generate.h), and not the encoder's.
bool isCacheInput(const onnxc_model_descriptor &model, int32_t index, const Value &input) {
  for (int32_t p = 0; p < model.num_cache_pairs; ++p)
    if (model.cache_pairs[p].input == index)
      return true;
  // An encoder's cross-attention K/V (past_key_values.0.encoder.key) is
  // named like a past but is the encoder's output: it keeps the source length.
  std::string name = lowercase(input.name());
  return input.shape().isRanked() && input.shape().rank() >= 3 &&
         name.find("past") != std::string::npos && name.find("encoder") == std::string::npos &&
         name.find("cross") == std::string::npos;
}

/// The symbol of a cache input's sequence axis: the pair's axis, else the
/// first plain symbol after the leading dim that is not a batch.
std::string cacheLengthSymbol(const onnxc_model_descriptor &model, int32_t index,
                              const Value &input) {
  const Shape &shape = input.shape();
  for (int32_t p = 0; p < model.num_cache_pairs; ++p) {
    const onnxc_cache_pair &pair = model.cache_pairs[p];
    if (pair.input == index && size_t(pair.axis) < shape.rank() && shape[pair.axis].isSymbol())
      return shape[pair.axis].symbolName();
  }
  for (size_t axis = 1; axis < shape.rank(); ++axis)
    if (shape[axis].isSymbol() && !isBatchSymbol(shape[axis].symbolName(), axis))
      return shape[axis].symbolName();
  return "";
}

} // namespace

std::set<std::string> addBenchDefaults(const Graph &graph, const onnxc_model_descriptor &model,
                                       InputRequest &request) {
  request.masksAreOnes = true;
  for (int32_t i = 0; i < model.num_inputs; ++i)
    if (model.input_index_bounds && model.input_index_bounds[i] > 0 && model.inputs[i].name)
      request.indexBounds[model.inputs[i].name] = model.input_index_bounds[i];

  // The descriptor and the graph list the same inputs in the same order.
  std::set<std::string> cacheSymbols;
  const std::vector<Value *> &inputs = graph.inputs();
  for (size_t i = 0; i < inputs.size() && int32_t(i) < model.num_inputs; ++i) {
    if (!isCacheInput(model, int32_t(i), *inputs[i]))
      continue;
    std::string symbol = cacheLengthSymbol(model, int32_t(i), *inputs[i]);
    if (!symbol.empty() && cacheSymbols.insert(symbol).second)
      request.defaultSymbols.emplace_back(symbol, 0);
  }
  for (const Value *input : inputs) {
    const Shape &shape = input->shape();
    if (!shape.isRanked())
      continue;
    for (size_t axis = 0; axis < shape.rank(); ++axis)
      if (shape[axis].isSymbol() && !cacheSymbols.count(shape[axis].symbolName()))
        request.defaultSymbols.emplace_back(shape[axis].symbolName(),
                                            isBatchSymbol(shape[axis].symbolName(), axis)
                                                ? kBenchDefaultBatch
                                                : kBenchDefaultSequence);
  }
  return cacheSymbols;
}

} // namespace onnxc
