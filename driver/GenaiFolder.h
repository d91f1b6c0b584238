//===- driver/GenaiFolder.h - An onnxruntime-genai model folder (genai_config.json) -===//
//
// onnxruntime-genai's model builder writes a folder: the decoder's ONNX file,
// its external data, the tokenizer, and genai_config.json, which names the
// decoder's file, its inputs and outputs (the cache names as printf patterns
// over the layer, "past_key_values.%d.key"), the special token ids, the
// context length and the search defaults. This reads the parts a generator
// needs, so `onnxc generate FOLDER` runs without --map.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace onnxc {

struct GenaiFolder {
  std::string modelPath; ///< the decoder's ONNX file, inside the folder
  std::string inputIds, attentionMask, positionIds, logits; ///< empty: not named
  /// (past input, present output) of every layer's key and value.
  std::vector<std::pair<std::string, std::string>> cachePairs;
  std::vector<int64_t> eosTokenIds; ///< genai allows one id or a list
  std::optional<int64_t> bosTokenId, padTokenId, contextLength;
  // search defaults
  std::optional<int64_t> maxLength, topK;
  std::optional<double> topP, temperature;
  std::optional<bool> doSample;

  /// The generator's mapping ("role=name,past=present,...").
  std::string mapping() const;
};

/// Whether `path` is a folder holding genai_config.json.
bool isGenaiFolder(const std::string &path);

/// Reads FOLDER/genai_config.json; a malformed file, or a field of the wrong
/// kind, fails with one line naming the file and the field.
GenaiFolder readGenaiFolder(const std::string &folder);

} // namespace onnxc
