//===- text/Normalizers.h - tokenizer.json normalizers -----------------------===//
#pragma once

#include "text/Components.h"
#include "text/JsonFields.h"

namespace onnxc::text {

/// The normalizer a tokenizer.json "normalizer" object describes (null: none).
/// Supported: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, BertNormalizer,
/// Strip, Prepend, Replace, Precompiled, Sequence; anything else is refused by name.
std::unique_ptr<Normalizer> makeNormalizer(const JsonValue &value, const std::string &where);

/// SentencePiece's compiled character map (text/PrecompiledNormalizer.cpp).
std::unique_ptr<Normalizer> makePrecompiledNormalizer(const JsonObject &object,
                                                      const std::string &where);

} // namespace onnxc::text
