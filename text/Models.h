//===- text/Models.h - tokenizer.json models ---------------------------------===//
#pragma once

#include "text/Components.h"
#include "text/JsonFields.h"

namespace onnxc::text {

/// The model a tokenizer.json "model" object describes: BPE, WordPiece,
/// WordLevel or Unigram; anything else is refused by name.
std::unique_ptr<Model> makeModel(const JsonValue &value, const std::string &where);

std::unique_ptr<Model> makeBpeModel(const JsonObject &object, const std::string &where);
std::unique_ptr<Model> makeWordPieceModel(const JsonObject &object, const std::string &where);
std::unique_ptr<Model> makeWordLevelModel(const JsonObject &object, const std::string &where);
std::unique_ptr<Model> makeUnigramModel(const JsonObject &object, const std::string &where);

} // namespace onnxc::text
