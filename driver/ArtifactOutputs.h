//===- driver/ArtifactOutputs.h - Compiling never overwrites its inputs ---===//
//
// `compile m.onnx -o ./m.onnx`, a header that is a symlink to the library,
// an output named like the model's external weights file: each would
// silently destroy a file the compile reads or writes. Every front end that
// writes an artifact (onnxc compile, onnxc.compile(output=)) refuses them
// here, before any write, comparing files by what they name (FileIdentity.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelCompiler.h"

#include <string>
#include <vector>

namespace onnxc {

/// How a front end spells its output options in messages ("-o" and
/// "--header" for the tool, "output=" and "header=" for Python).
struct ArtifactOptionNames {
  std::string output;
  std::string header;
};

/// Refuses outputs that would write over the input model or over each
/// other. `headerIsDefault`: the header path was derived from the output's.
/// Throws onnxc::Error naming both paths and the option to change.
void checkArtifactSparesInputs(const std::string &model, const ArtifactRequest &request,
                               bool headerIsDefault, const ArtifactOptionNames &names);

/// Refuses outputs that would write over a file the model's weights were
/// read from (known once the model is loaded: loadModel's `externalFiles`).
void checkArtifactSparesExternalData(const std::vector<std::string> &externalFiles,
                                     const ArtifactRequest &request,
                                     const ArtifactOptionNames &names);

/// Refuses to write `written` when it is the model or one of the external
/// data files it was loaded from (any spelling of them). `what` says who
/// writes ("-o 'm.onnx'", "output 'y' in --output-dir"), `remedy` what to
/// change ("choose another -o").
void checkWriteSparesModel(const std::string &written, const std::string &what,
                           const std::string &model, const std::vector<std::string> &externalFiles,
                           const std::string &remedy);

} // namespace onnxc
