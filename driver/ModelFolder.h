//===- driver/ModelFolder.h - What `onnxc generate FOLDER` accepts as a model folder -===//
//
// Text generation starts from a folder more often than from a file: what
// onnxruntime-genai's model builder writes (genai_config.json), what
// Optimum's ONNX export writes (config.json, generation_config.json, the
// decoder's .onnx, tokenizer.json), or just one .onnx or compiled .so beside
// a tokenizer.json. This is the one place that tells them apart and reads
// what generation needs from their configs: the model file, the tokenizer,
// the stop (eos), bos and pad ids, whether a prompt starts with bos, and the
// search defaults. The command line and the Python package both use it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "driver/GenaiFolder.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onnxc {

struct ModelFolder {
  enum class Kind { Genai, Optimum, Plain };
  Kind kind = Kind::Plain;
  std::string folder;
  std::string modelPath;     ///< the .onnx (or compiled .so) to generate with
  std::string tokenizerPath; ///< tokenizer.json or tokenizer.model; empty: none
  /// An Optimum merged decoder (an If on use_cache_branch) was the only decoder.
  bool mergedDecoder = false;
  std::optional<GenaiFolder> genai; ///< genai_config.json's roles, for Kind::Genai

  std::vector<int64_t> eosTokenIds; ///< any of them ends a row; empty: none known
  std::optional<int64_t> bosTokenId, padTokenId;
  /// tokenizer_config.json's add_bos_token: whether a prompt starts with bos
  /// (unset: as the tokenizer's own post-processor says).
  std::optional<bool> addBosToken;

  // The search defaults of genai_config.json's "search" or generation_config.json.
  std::optional<int64_t> maxLength; ///< counts the prompt
  std::optional<int64_t> maxNewTokens, topK;
  std::optional<double> topP, temperature, repetitionPenalty;
  std::optional<bool> doSample;

  /// "onnxruntime-genai", "Optimum" or "model" (for messages).
  const char *kindName() const;
  /// The generator's role mapping (genai_config.json's names), or "".
  std::string mapping() const;
};

/// Whether `path` is a folder (a model folder or not: readModelFolder says).
bool isFolder(const std::string &path);

/// Reads a model folder; a folder that is none of the kinds above, a folder
/// with several candidate models, or a malformed config fails with one line
/// naming the folder or the file.
ModelFolder readModelFolder(const std::string &folder);

/// FOLDER/tokenizer.json, else FOLDER/tokenizer.model, else "".
std::string findTokenizer(const std::string &folder);

/// The one-line refusal of an Optimum merged decoder, given the generator's
/// own message about it.
std::string mergedDecoderMessage(const ModelFolder &folder, const std::string &generatorError);

} // namespace onnxc
