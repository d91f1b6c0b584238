//===- driver/GenaiFolder.cpp - An onnxruntime-genai model folder (genai_config.json) -===//
#include "driver/GenaiFolder.h"

#include "driver/ConfigJson.h"
#include "ir/Error.h"

#include <filesystem>

namespace onnxc {

std::string GenaiFolder::mapping() const {
  std::string out;
  auto add = [&](const std::string &role, const std::string &name) {
    if (!name.empty())
      out += (out.empty() ? "" : ",") + role + "=" + name;
  };
  add("input_ids", inputIds);
  add("attention_mask", attentionMask);
  add("position_ids", positionIds);
  add("logits", logits);
  for (const auto &[past, present] : cachePairs)
    add(past, present);
  return out;
}

bool isGenaiFolder(const std::string &path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error) &&
         std::filesystem::is_regular_file(std::filesystem::path(path) / "genai_config.json", error);
}

GenaiFolder readGenaiFolder(const std::string &folder) {
  std::string file = (std::filesystem::path(folder) / "genai_config.json").string();
  Json root = readJsonFile(file);
  ConfigReader read(file);
  const Json *model = root.field("model");
  const Json *decoder = model ? model->field("decoder") : nullptr;
  if (!decoder)
    fail(file, ": no 'model.decoder' section (is it an onnxruntime-genai folder?)");
  if (decoder->field("sliding_window") || decoder->field("pipeline"))
    fail(file, ": a decoder with a sliding window or a pipeline of models is not supported");
  GenaiFolder out;
  std::string filename = read.string(decoder, "filename", "model.decoder.");
  if (filename.empty())
    fail(file, ": 'model.decoder.filename' is missing");
  out.modelPath = (std::filesystem::path(folder) / filename).string();
  const Json *inputs = decoder->field("inputs");
  const Json *outputs = decoder->field("outputs");
  out.inputIds = read.string(inputs, "input_ids", "model.decoder.inputs.");
  out.attentionMask = read.string(inputs, "attention_mask", "model.decoder.inputs.");
  out.positionIds = read.string(inputs, "position_ids", "model.decoder.inputs.");
  out.logits = read.string(outputs, "logits", "model.decoder.outputs.");
  std::optional<int64_t> layers = read.integer(decoder, "num_hidden_layers", "model.decoder.");
  std::string pastKey = read.string(inputs, "past_key_names", "model.decoder.inputs.");
  std::string pastValue = read.string(inputs, "past_value_names", "model.decoder.inputs.");
  std::string presentKey = read.string(outputs, "present_key_names", "model.decoder.outputs.");
  std::string presentValue = read.string(outputs, "present_value_names", "model.decoder.outputs.");
  if (!pastKey.empty() || !presentKey.empty()) {
    if (!layers || *layers <= 0 || *layers > 4096)
      fail(file, ": 'model.decoder.num_hidden_layers' must be a positive layer count");
    if (pastKey.empty() || pastValue.empty() || presentKey.empty() || presentValue.empty())
      fail(file, ": the past and present key and value names must be given together");
    for (int64_t layer = 0; layer < *layers; ++layer) {
      out.cachePairs.emplace_back(read.layerName(pastKey, layer, "past_key_names"),
                                  read.layerName(presentKey, layer, "present_key_names"));
      out.cachePairs.emplace_back(read.layerName(pastValue, layer, "past_value_names"),
                                  read.layerName(presentValue, layer, "present_value_names"));
    }
  }
  out.eosTokenIds = read.ids(model, "eos_token_id", "model.");
  std::vector<int64_t> bos = read.ids(model, "bos_token_id", "model.");
  std::vector<int64_t> pad = read.ids(model, "pad_token_id", "model.");
  if (!bos.empty())
    out.bosTokenId = bos[0];
  if (!pad.empty())
    out.padTokenId = pad[0];
  out.contextLength = read.integer(model, "context_length", "model.");
  const Json *search = root.field("search");
  out.maxLength = read.integer(search, "max_length", "search.");
  out.topK = read.integer(search, "top_k", "search.");
  out.topP = read.number(search, "top_p", "search.");
  out.temperature = read.number(search, "temperature", "search.");
  out.doSample = read.boolean(search, "do_sample", "search.");
  if (std::optional<int64_t> beams = read.integer(search, "num_beams", "search.");
      beams && *beams != 1)
    fail(file, ": 'search.num_beams' = ", *beams, " is not supported (onnxc generates one beam)");
  return out;
}

} // namespace onnxc
