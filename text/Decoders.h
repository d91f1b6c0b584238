//===- text/Decoders.h - tokenizer.json decoders -----------------------------===//
#pragma once

#include "text/Components.h"
#include "text/JsonFields.h"

namespace onnxc::text {

/// The decoder a tokenizer.json "decoder" object describes (null: none, the
/// tokens are joined with spaces). Supported: ByteLevel, WordPiece, Metaspace,
/// ByteFallback, Fuse, Strip, Replace, BPEDecoder, Sequence.
std::unique_ptr<Decoder> makeDecoder(const JsonValue &value, const std::string &where);

} // namespace onnxc::text
