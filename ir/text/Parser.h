//===- ir/text/Parser.h - Reading the textual IR ---------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <memory>
#include <string>
#include <string_view>

namespace onnxc {

/// Parses one graph in the text form of docs/IR.md. Throws onnxc::Error
/// "FILE:LINE:COL: message" on a syntax or reference error. The result is
/// not verified; call verifyGraph.
std::unique_ptr<Graph> parseGraph(std::string_view text, const std::string &fileName = "<input>");
/// Reads and parses a file.
std::unique_ptr<Graph> parseGraphFile(const std::string &path);

} // namespace onnxc
