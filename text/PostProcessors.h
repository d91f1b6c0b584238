//===- text/PostProcessors.h - tokenizer.json post-processors ----------------===//
#pragma once

#include "text/Components.h"
#include "text/JsonFields.h"

namespace onnxc::text {

/// The post-processor a tokenizer.json "post_processor" object describes
/// (null: none). Supported: TemplateProcessing, BertProcessing,
/// RobertaProcessing, ByteLevel (ids unchanged), Sequence.
std::unique_ptr<PostProcessor> makePostProcessor(const JsonValue &value, const std::string &where);

} // namespace onnxc::text
