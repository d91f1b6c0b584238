//===- tools/onnxc/ProgressLine.cpp - A status line for long commands -----===//
#include "tools/onnxc/ProgressLine.h"

#include <cstdio>
#include <iostream>
#include <sys/ioctl.h>
#include <unistd.h>

namespace onnxc {

namespace {

/// Redraws within a stage at most this often: fast enough to look alive,
/// slow enough not to flood a remote terminal.
constexpr std::chrono::milliseconds kRedrawInterval(100);

size_t terminalWidth() {
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 10)
    return size.ws_col;
  return 80;
}

} // namespace

std::vector<OptionSpec> progressOptions() {
  return {
      {"quiet", "", "no progress line on stderr (it is drawn only on a terminal)"},
      {"verbose", "", "print the details of the result (compile: CPU features, KV cache pairs)"},
  };
}

ProgressLine &ProgressLine::instance() {
  static ProgressLine line;
  return line;
}

void ProgressLine::configure(const ParsedArgs &args) {
  // --json's reader and the IR printing options want stderr to themselves.
  enabled_ = isatty(STDERR_FILENO) && !args.has("quiet") && !args.has("json") &&
             !args.has("print-ir-after-all") && !args.has("print-ir-after");
  start_ = std::chrono::steady_clock::now();
}

ProgressCallback ProgressLine::callback() {
  if (!enabled_)
    return {};
  return [this](const ProgressEvent &event) {
    draw(event);
    return true;
  };
}

void ProgressLine::draw(const ProgressEvent &event) {
  auto now = std::chrono::steady_clock::now();
  if (event.stage == CompileStage::Done) {
    clear();
    return;
  }
  if (shown_ && event.stage == stage_ && now - lastDraw_ < kRedrawInterval)
    return;
  stage_ = event.stage;
  lastDraw_ = now;
  std::string text = std::string("onnxc: ") + stageName(event.stage);
  if (event.total > 0)
    text += " " + std::to_string(event.done) + "/" + std::to_string(event.total);
  if (!event.detail.empty())
    text += "  " + event.detail;
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "  (%.1f s)",
                std::chrono::duration<double>(now - start_).count());
  // The line must never wrap: a wrapped line cannot be redrawn in place.
  size_t width = terminalWidth() - 1;
  std::string tail = elapsed;
  if (text.size() + tail.size() > width)
    text = text.substr(0, width > tail.size() + 3 ? width - tail.size() - 3 : 0) + "...";
  std::cerr << "\r\033[K" << text << tail << std::flush;
  shown_ = true;
}

void ProgressLine::clear() {
  if (!shown_)
    return;
  std::cerr << "\r\033[K" << std::flush;
  shown_ = false;
}

} // namespace onnxc
