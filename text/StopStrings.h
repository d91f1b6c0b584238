//===- text/StopStrings.h - Stop strings over streamed text ------------------===//
//
// A row of generated text ends when it contains a stop string, and its text
// is cut before the stop (OpenAI's `stop`). While streaming, the end of the
// text that could still grow into a stop string is held back: "\n" waits
// when "\n\n" is a stop, and goes out with the next piece if that is not a
// second "\n". Whatever is handed out is final, so the pieces concatenate to
// the row's text.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace onnxc::text {

class StopStrings {
public:
  /// `stops` must outlive this and hold no empty string.
  explicit StopStrings(const std::vector<std::string> &stops);

  /// Appends decoded text; returns the text that is now final (empty when
  /// all of it may be the start of a stop, or after a stop).
  std::string add(std::string_view piece);
  /// At the end of the generation: what was held back.
  std::string finish();

  /// The index of the stop string found, or -1.
  int32_t stopIndex() const { return stop_; }
  /// The text so far (cut before the stop once one is found).
  const std::string &text() const { return text_; }

private:
  /// How many bytes at the end of the text begin some stop string.
  size_t heldBack() const;

  const std::vector<std::string> &stops_;
  size_t longest_ = 0;
  std::string text_;
  size_t handedOut_ = 0;
  int32_t stop_ = -1;
};

} // namespace onnxc::text
