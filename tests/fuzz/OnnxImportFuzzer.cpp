//===- tests/fuzz/OnnxImportFuzzer.cpp - ONNX bytes through import and -O2 ===//
//
// Input: the bytes of a .onnx file (a ModelProto). They go the way `onnxc
// dump -O2 model.onnx` takes them: protobuf parse and model checks, opset
// check, graph import (external data resolved inside an empty folder),
// shape inference, the verifier, then the -O2 pipeline. Any of those may
// refuse the model with onnxc::Error. What must hold when they accept it:
// the optimized graph still verifies, and both the imported and the
// optimized graph print, parse back and print to the same text.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "frontend/GraphImporter.h"
#include "frontend/ModelLoader.h"
#include "ir/Error.h"
#include "ir/Verifier.h"
#include "ir/infer/ShapeInference.h"
#include "passes/PassManager.h"
#include "passes/Pipelines.h"

#include <sstream>

using namespace onnxc;

namespace {

const std::string &modelFolder() {
  static const std::string folder = fuzz::makeTempDir("onnxc-fuzz-import-");
  return folder;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::limitMemory();
  modelFolder();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::unique_ptr<Graph> graph;
  try {
    onnx::ModelProto model = parseModelProto(data, size);
    OpsetMap opsets = checkOpsets(model);
    graph = importGraph(model.graph(), opsets, modelFolder());
    inferShapes(*graph);
    verifyGraph(*graph);
  } catch (const Error &e) {
    fuzz::note(e.what());
    return 0;
  }
  fuzz::expectPrintRoundTrip(*graph, "imported graph");

  try {
    std::ostringstream sink; // nothing is printed unless asked for
    PassManager pm(PassManagerOptions(), &sink);
    addOptimizationPipeline(pm, 2);
    pm.run(*graph);
  } catch (const Error &e) {
    fuzz::note(e.what());
    // A pass may refuse what it cannot handle (a constant it cannot fold
    // because it is out of range, say); that is a clean error.
    return 0;
  }
  try {
    verifyGraph(*graph);
  } catch (const Error &e) {
    fuzz::finding(std::string("the -O2 pipeline left a graph the verifier refuses: ") + e.what());
  }
  fuzz::expectPrintRoundTrip(*graph, "-O2 graph");
  return 0;
}
