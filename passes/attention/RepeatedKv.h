//===- passes/attention/RepeatedKv.h - KV heads repeated in repeat_kv's form ---===//
//
// group-repeated-kv brings every exporter's repeat of the KV heads to LLaMA
// repeat_kv's form; the passes after it read that form with this.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/MatchSupport.h"

#include <cstdint>

namespace onnxc::attention {

/// x [b, g, S, d] repeated n times per head to [b, g*n, S, d].
struct RepeatedKv {
  Value *source = nullptr;
  int64_t copies = 0;
};

/// Reads `value` as Reshape(Expand(Unsqueeze(x, [2]))) merging n copies of
/// each of x's g heads into g*n (the form group-repeated-kv writes), or says
/// why it is not one.
match::MatchResult<RepeatedKv> readRepeatKv(const Value *value);

} // namespace onnxc::attention
