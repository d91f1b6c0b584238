//===- tests/fuzz/IrParserFuzzer.cpp - Text IR through parser and verifier ===//
//
// Input: text IR, as `onnxc dump file.ir` reads it: parse, verify, infer
// shapes. Each step may refuse the text with onnxc::Error. What must hold:
// whatever parses prints back to text that parses and prints identically
// (before verification, and again once shapes are inferred), and a graph
// that verified still verifies after inference filled in its types.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "ir/Error.h"
#include "ir/Verifier.h"
#include "ir/infer/ShapeInference.h"
#include "ir/text/Parser.h"

#include <string_view>

using namespace onnxc;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::limitMemory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::unique_ptr<Graph> graph;
  try {
    graph = parseGraph(text, "fuzz.ir");
  } catch (const Error &e) {
    fuzz::note(e.what());
    return 0;
  }
  fuzz::expectPrintRoundTrip(*graph, "parsed graph");
  try {
    verifyGraph(*graph);
    inferShapes(*graph);
  } catch (const Error &e) {
    fuzz::note(e.what());
    return 0;
  }
  try {
    verifyGraph(*graph);
  } catch (const Error &e) {
    fuzz::finding(std::string("a verified graph fails verification after shape inference: ") +
                  e.what());
  }
  fuzz::expectPrintRoundTrip(*graph, "shape-inferred graph");
  return 0;
}
