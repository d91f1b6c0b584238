//===- driver/ModelFolder.cpp - What `onnxc generate FOLDER` accepts as a model folder -===//
#include "driver/ModelFolder.h"

#include "driver/ConfigJson.h"
#include "ir/Error.h"

#include <algorithm>
#include <filesystem>

namespace onnxc {
namespace {

namespace fs = std::filesystem;

bool isFile(const fs::path &path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

/// Optimum's decoder files, the one to take first first: model.onnx (one
/// decoder with its cache, what recent Optimum writes), the decoder with
/// past (a cache of length 0 at the prompt), the merged decoder (an If on
/// use_cache_branch) and the decoder without a cache.
const char *const optimumDecoders[] = {"model.onnx", "decoder_with_past_model.onnx",
                                       "decoder_model_merged.onnx", "decoder_model.onnx"};

/// The one .onnx or .so of a folder that is neither genai's nor Optimum's.
std::string onlyModelFile(const std::string &folder) {
  std::vector<std::string> found;
  std::error_code error;
  for (const fs::directory_entry &entry : fs::directory_iterator(folder, error)) {
    std::string extension = entry.path().extension().string();
    if ((extension == ".onnx" || extension == ".so") && isFile(entry.path()))
      found.push_back(entry.path().filename().string());
  }
  if (error)
    fail(folder, ": cannot list the folder: ", error.message());
  std::sort(found.begin(), found.end());
  if (found.empty())
    fail(folder, ": not a model folder: no genai_config.json, no Optimum export (config.json with "
                 "model.onnx, decoder_with_past_model.onnx or decoder_model_merged.onnx), and no "
                 ".onnx or .so file");
  if (found.size() > 1) {
    // The first few, sorted: a folder of a hundred models still gives one short line.
    constexpr size_t kNamed = 4;
    std::string names;
    for (size_t i = 0; i < found.size() && i < kNamed; ++i)
      names += (names.empty() ? "" : ", ") + found[i];
    if (found.size() > kNamed)
      names += ", and " + std::to_string(found.size() - kNamed) + " more";
    fail(folder, ": holds ", found.size(), " models (", names,
         "); pass the one to use as the MODEL file");
  }
  return (fs::path(folder) / found[0]).string();
}

/// Fills what `into` lacks from generation_config.json and config.json.
void readGenerationConfig(const fs::path &folder, ModelFolder &into) {
  for (const char *name : {"generation_config.json", "config.json"}) {
    fs::path path = folder / name;
    if (!isFile(path))
      continue;
    Json root = readJsonFile(path.string());
    ConfigReader read(path.string());
    if (into.eosTokenIds.empty())
      into.eosTokenIds = read.ids(&root, "eos_token_id", "");
    auto first = [&](const char *field, std::optional<int64_t> &value) {
      std::vector<int64_t> ids = read.ids(&root, field, "");
      if (!value && !ids.empty())
        value = ids[0];
    };
    first("bos_token_id", into.bosTokenId);
    first("pad_token_id", into.padTokenId);
    // config.json's search fields are legacy copies; generation_config.json's are the ones HF uses.
    if (std::string(name) != "generation_config.json")
      continue;
    auto fill = [](auto &value, auto read) {
      if (!value)
        value = read;
    };
    fill(into.maxLength, read.integer(&root, "max_length", ""));
    fill(into.maxNewTokens, read.integer(&root, "max_new_tokens", ""));
    fill(into.topK, read.integer(&root, "top_k", ""));
    fill(into.topP, read.number(&root, "top_p", ""));
    fill(into.temperature, read.number(&root, "temperature", ""));
    fill(into.repetitionPenalty, read.number(&root, "repetition_penalty", ""));
    fill(into.doSample, read.boolean(&root, "do_sample", ""));
  }
  fs::path tokenizerConfig = folder / "tokenizer_config.json";
  if (isFile(tokenizerConfig)) {
    Json root = readJsonFile(tokenizerConfig.string());
    into.addBosToken = ConfigReader(tokenizerConfig.string()).boolean(&root, "add_bos_token", "");
  }
}

void takeGenai(const std::string &folder, ModelFolder &out) {
  out.kind = ModelFolder::Kind::Genai;
  GenaiFolder genai = readGenaiFolder(folder);
  out.modelPath = genai.modelPath;
  out.eosTokenIds = genai.eosTokenIds;
  out.bosTokenId = genai.bosTokenId;
  out.padTokenId = genai.padTokenId;
  out.maxLength = genai.maxLength;
  out.topK = genai.topK;
  out.topP = genai.topP;
  out.temperature = genai.temperature;
  out.doSample = genai.doSample;
  out.genai = std::move(genai);
}

} // namespace

const char *ModelFolder::kindName() const {
  switch (kind) {
  case Kind::Genai:
    return "onnxruntime-genai";
  case Kind::Optimum:
    return "Optimum";
  case Kind::Plain:
    break;
  }
  return "model";
}

std::string ModelFolder::mapping() const { return genai ? genai->mapping() : ""; }

bool isFolder(const std::string &path) {
  std::error_code error;
  return fs::is_directory(path, error);
}

std::string findTokenizer(const std::string &folder) {
  for (const char *name : {"tokenizer.json", "tokenizer.model"})
    if (isFile(fs::path(folder) / name))
      return (fs::path(folder) / name).string();
  return "";
}

ModelFolder readModelFolder(const std::string &folder) {
  if (!isFolder(folder))
    fail(folder, ": not a folder");
  ModelFolder out;
  out.folder = folder;
  fs::path root(folder);
  if (isGenaiFolder(folder)) {
    takeGenai(folder, out);
  } else if (isFile(root / "config.json")) {
    for (const char *name : optimumDecoders)
      if (out.modelPath.empty() && isFile(root / name)) {
        out.kind = ModelFolder::Kind::Optimum;
        out.modelPath = (root / name).string();
        out.mergedDecoder = std::string(name) == "decoder_model_merged.onnx";
      }
  }
  if (out.modelPath.empty())
    out.modelPath = onlyModelFile(folder);
  readGenerationConfig(root, out);
  out.tokenizerPath = findTokenizer(folder);
  return out;
}

std::string mergedDecoderMessage(const ModelFolder &folder, const std::string &generatorError) {
  return folder.modelPath +
         ": an Optimum merged decoder (an If on use_cache_branch) is not supported yet; export "
         "with Optimum's --no-post-process for decoder_with_past_model.onnx, or a recent Optimum's "
         "model.onnx (" +
         generatorError + ")";
}

} // namespace onnxc
