//===- ir/Progress.cpp - What a long compile reports as it goes -----------===//
#include "ir/Progress.h"

namespace onnxc {

const char *stageName(CompileStage stage) {
  switch (stage) {
  case CompileStage::Load:
    return "load";
  case CompileStage::Passes:
    return "passes";
  case CompileStage::Lower:
    return "lower";
  case CompileStage::Optimize:
    return "optimize";
  case CompileStage::Codegen:
    return "codegen";
  case CompileStage::Link:
    return "link";
  case CompileStage::Done:
    return "done";
  }
  return "?";
}

void reportProgress(const ProgressCallback &callback, const ProgressEvent &event) {
  if (callback && !callback(event))
    throw Interrupted();
}

void notifyProgress(const ProgressCallback &callback, const ProgressEvent &event) {
  if (callback)
    callback(event);
}

} // namespace onnxc
