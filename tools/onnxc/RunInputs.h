//===- tools/onnxc/RunInputs.h - Inputs of `onnxc run` ----------------------===//
//
// Inputs come from .npy files or are generated from a fixed seed when asked
// for with --shape (`onnxc bench` generates the rest too). Symbolic
// dims (batch, seq) are bound by the shapes of given files and --shape
// options, so `--shape input_ids=1x128` also sizes an attention mask
// declared [batch, seq].
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace onnxc {

struct InputRequest {
  /// Input name -> .npy path (--input NAME=FILE.npy).
  std::map<std::string, std::string> files;
  /// Input name -> concrete dims (--shape NAME=1x128).
  std::map<std::string, std::vector<int64_t>> shapes;
  uint64_t seed = 0;
  /// Values for the symbols no file and no --shape binds (`onnxc bench`:
  /// batch 1, sequence 128, a KV cache's past length 0), in this order of
  /// preference: a symbol bound by a given input keeps that value.
  std::vector<std::pair<std::string, int64_t>> defaultSymbols;
  /// Input name -> exclusive bound of its values, known beyond the graph (a
  /// compiled model's input_index_bounds).
  std::map<std::string, int64_t> indexBounds;
  /// Integer inputs named like a mask are ones instead of random 0s and 1s
  /// (`onnxc bench`: a random padding mask can mask whole rows), or zeros
  /// when named like a padding mask (torch's key_padding_mask: true = pad).
  bool masksAreOnes = false;
};

/// What prepareInputs made up, for a report.
struct GeneratedInputs {
  /// The defaultSymbols that were used (no input bound them).
  std::vector<std::pair<std::string, int64_t>> defaultedSymbols;
  /// Generated input -> what its values are ("random in [-1, 1)", "ones",
  /// "ids in [0, 2)").
  std::map<std::string, std::string> values;
};

/// What to do with an input that neither --input nor --shape names.
enum class MissingInputs {
  /// An error naming it (`onnxc run`: like onnxruntime, a forgotten
  /// attention_mask must not be filled with random values).
  Refuse,
  /// Generate it with the dims the other inputs bind (`onnxc bench`, whose
  /// outputs nobody reads: one --shape sizes every input of a benchmark).
  Generate,
};

/// Builds a tensor for every graph input: read from its --input file,
/// generated for its --shape, and otherwise refused or generated as
/// `missing` says. Generated values: floats uniform
/// in [-1, 1); integers used as Gather indices (directly or through Cast,
/// Unsqueeze, Reshape: ir/IndexTables.h) uniform in [0, size of the
/// gathered axis); other integers named like "*mask*" (and bools) in {0, 1}
/// (ones with masksAreOnes); other integers in [0, 10). A compiled model's signature has no Gather,
/// so `onnxc run model.so` draws token ids in [0, 10) where `onnxc run model.onnx` draws them below
/// the vocabulary size. Throws onnxc::Error naming the input when a file does not match the
/// declared type, or a shape cannot be resolved.
std::map<std::string, Tensor> prepareInputs(const Graph &graph, const InputRequest &request,
                                            MissingInputs missing,
                                            GeneratedInputs *generated = nullptr);

/// Parses "1x128" (empty text is a scalar); throws UsageError naming `option`.
std::vector<int64_t> parseShapeText(const std::string &text, const std::string &option);

} // namespace onnxc
