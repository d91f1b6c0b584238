//===- text/StopStrings.cpp - Stop strings over streamed text ----------------===//
#include "text/StopStrings.h"

#include <algorithm>

namespace onnxc::text {

StopStrings::StopStrings(const std::vector<std::string> &stops) : stops_(stops) {
  for (const std::string &stop : stops)
    longest_ = std::max(longest_, stop.size());
}

size_t StopStrings::heldBack() const {
  size_t held = 0;
  for (const std::string &stop : stops_)
    for (size_t k = std::min(stop.size() - 1, text_.size()); k > held; --k)
      if (text_.compare(text_.size() - k, k, stop, 0, k) == 0) {
        held = k;
        break;
      }
  return held;
}

std::string StopStrings::add(std::string_view piece) {
  if (stop_ >= 0 || piece.empty())
    return "";
  size_t before = text_.size();
  text_ += piece;
  if (longest_ > 0) {
    // A stop found now ends in the new text, so it starts at most longest_ - 1 bytes before it.
    size_t from = before >= longest_ - 1 ? before - (longest_ - 1) : 0;
    size_t first = std::string::npos;
    for (size_t i = 0; i < stops_.size(); ++i) {
      size_t at = text_.find(stops_[i], from);
      if (at < first) {
        first = at;
        stop_ = int32_t(i);
      }
    }
    if (first != std::string::npos) {
      // What was handed out could not begin a stop, so the stop starts after it.
      text_.resize(first);
      std::string out = text_.substr(handedOut_);
      handedOut_ = text_.size();
      return out;
    }
  }
  // Text holds whole characters and a stop string is valid UTF-8, so the
  // held-back end starts on a character boundary.
  size_t until = text_.size() - heldBack();
  std::string out = text_.substr(handedOut_, until - handedOut_);
  handedOut_ = until;
  return out;
}

std::string StopStrings::finish() {
  std::string out = text_.substr(handedOut_);
  handedOut_ = text_.size();
  return out;
}

} // namespace onnxc::text
