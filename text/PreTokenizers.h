//===- text/PreTokenizers.h - tokenizer.json pre-tokenizers ------------------===//
#pragma once

#include "text/Components.h"
#include "text/JsonFields.h"

namespace onnxc::text {

/// The pre-tokenizer a tokenizer.json "pre_tokenizer" object describes (null:
/// none). Supported: ByteLevel, Split, Metaspace, Whitespace, WhitespaceSplit,
/// BertPreTokenizer, Digits, Punctuation, CharDelimiterSplit, Sequence.
std::unique_ptr<PreTokenizer> makePreTokenizer(const JsonValue &value, const std::string &where);

} // namespace onnxc::text
