//===- tools/onnxc/GraphvizRender.h - Running Graphviz's dot ----------------===//
#pragma once

#include <string>

namespace onnxc {

/// Renders DOT text to `outputPath` in `format` ("svg" or "png") with the
/// `dot` program found on PATH. Throws onnxc::Error saying Graphviz is
/// missing when there is no `dot`, or with dot's exit status when it fails.
void renderWithGraphviz(const std::string &dotText, const std::string &format,
                        const std::string &outputPath);

} // namespace onnxc
