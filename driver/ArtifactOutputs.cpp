//===- driver/ArtifactOutputs.cpp - Compiling never overwrites its inputs -===//
#include "driver/ArtifactOutputs.h"

#include "driver/FileIdentity.h"
#include "ir/Error.h"

#include <utility>

namespace onnxc {

void checkArtifactSparesInputs(const std::string &model, const ArtifactRequest &request,
                               bool headerIsDefault, const ArtifactOptionNames &names) {
  FileIdentity input = fileIdentity(model);
  FileIdentity output = fileIdentity(request.outputPath);
  if (output == input)
    fail(names.output, " '", request.outputPath, "' is the input model '", model,
         "'; compiling would overwrite it (choose another ", names.output, ")");
  if (request.kind != ArtifactRequest::Kind::SharedLibrary)
    return;
  FileIdentity header = fileIdentity(request.headerPath);
  if (header == input)
    fail("the header '", request.headerPath, "' is the input model '", model,
         "'; compiling would overwrite it (choose another ", names.header, ")");
  if (header == output) {
    if (headerIsDefault)
      fail(names.output, " '", request.outputPath,
           "' is also the default header path (FILE with .h); name the library model.so, or "
           "choose the header with ",
           names.header);
    fail(names.header, " '", request.headerPath, "' and ", names.output, " '", request.outputPath,
         "' name the same file; the header would overwrite the library");
  }
}

void checkArtifactSparesExternalData(const std::vector<std::string> &externalFiles,
                                     const ArtifactRequest &request,
                                     const ArtifactOptionNames &names) {
  std::vector<std::pair<std::string, std::string>> outputs = {{names.output, request.outputPath}};
  if (request.kind == ArtifactRequest::Kind::SharedLibrary)
    outputs.push_back({"the header", request.headerPath});
  for (const auto &[what, output] : outputs) {
    FileIdentity written = fileIdentity(output);
    for (const std::string &data : externalFiles)
      if (written == fileIdentity(data))
        fail(what, " '", output, "' is the external data file '", data,
             "' of the input model; compiling would overwrite it");
  }
}

void checkWriteSparesModel(const std::string &written, const std::string &what,
                           const std::string &model, const std::vector<std::string> &externalFiles,
                           const std::string &remedy) {
  FileIdentity target = fileIdentity(written);
  if (target == fileIdentity(model))
    fail(what, " would overwrite the model '", model, "'; ", remedy);
  for (const std::string &data : externalFiles)
    if (target == fileIdentity(data))
      fail(what, " would overwrite '", data, "', the external data of the model; ", remedy);
}

} // namespace onnxc
