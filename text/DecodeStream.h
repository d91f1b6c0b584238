//===- text/DecodeStream.h - Streaming detokenization ------------------------===//
//
// Generation produces one id at a time, and one character may take several
// (a byte-level BPE emoji is up to four byte tokens; a byte-fallback one is
// four <0xNN> tokens). The stream decodes a short window of recent ids and
// hands out only text that is whole: a window whose decoding ends in U+FFFD
// waits for the next id. Decoding the window with the ids before it keeps
// decoders that look at neighbours (Metaspace's leading space, WordPiece's
// "##") right.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "text/Tokenizer.h"

namespace onnxc::text {

class DecodeStream {
public:
  DecodeStream(const Tokenizer &tokenizer, bool skipSpecialTokens)
      : tokenizer_(tokenizer), skipSpecialTokens_(skipSpecialTokens) {}

  /// The text `id` completes; empty while a character is still partial.
  std::string push(uint32_t id);
  /// What is left at the end (a partial character comes out as U+FFFD).
  std::string finish();

private:
  const Tokenizer &tokenizer_;
  bool skipSpecialTokens_;
  std::vector<uint32_t> ids_;
  size_t prefixOffset_ = 0; // the window's context starts here
  size_t readOffset_ = 0;   // text up to here has been handed out
};

} // namespace onnxc::text
