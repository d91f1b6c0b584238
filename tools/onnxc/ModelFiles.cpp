//===- tools/onnxc/ModelFiles.cpp - What a command's file arguments accept --===//
#include "tools/onnxc/ModelFiles.h"

#include "ir/Error.h"
#include "tools/onnxc/Commands.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace onnxc {

namespace fs = std::filesystem;

void checkModelFile(const std::string &path, const std::string &command, ModelKinds kinds) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found)
    fail(path, ": no such file");
  if (status.type() == fs::file_type::directory)
    fail(path, ": is a directory, not a model file");
  if (ec)
    fail(path, ": cannot read (", ec.message(), ")");
  if (status.type() != fs::file_type::regular)
    fail(path, ": not a regular file (", command, " reads a model file)");

  std::string ext = fs::path(path).extension().string();
  bool libraries = kinds == ModelKinds::GraphsAndLibraries;
  if (ext == ".onnx" || ext == ".ir" || (libraries && (ext == ".so" || ext == ".dylib")))
    return;
  if (ext == ".so")
    fail(path, ": a compiled library holds no graph to ", command,
         " ('onnxc run' and 'onnxc bench' run it); pass the .onnx or .ir it was built from");
  std::string expected = libraries ? ".onnx, .ir or a compiled .so" : ".onnx or .ir";
  std::string hint;
  if (ext == ".npy")
    hint = libraries ? "; an .npy file is an input: --input NAME=" + path
                     : "; an .npy file is no model";
  fail(path, ": unknown model file type '", ext, "' (", command, " takes ", expected, ")", hint);
}

void checkOutputFile(const std::string &option, const std::string &path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    fail(option, " '", path, "' is a directory; name the file to write");
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty())
    folder = ".";
  fs::file_status status = fs::status(folder, ec);
  if (status.type() == fs::file_type::not_found)
    fail(option, " '", path, "': the directory '", folder.string(), "' does not exist");
  if (status.type() != fs::file_type::directory)
    fail(option, " '", path, "': '", folder.string(), "' is not a directory");
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    fail(option, " '", path, "': cannot write in '", folder.string(), "' (", std::strerror(errno),
         ")");
}

void refuseCompileOptions(const ParsedArgs &args, const std::string &path,
                          const std::string &command) {
  std::string given;
  int count = 0;
  for (const std::vector<OptionSpec> &group : {pipelineOptions(), targetOptions()})
    for (const OptionSpec &spec : group) {
      if (!args.has(spec.name))
        continue;
      std::string spelling = spec.spelling();
      if (spec.takesValue())
        spelling += (spec.name.size() == 1 ? "" : "=") + args.get(spec.name);
      given += (given.empty() ? "" : ", ") + spelling;
      ++count;
    }
  if (count == 0)
    return;
  throw UsageError("'" + path + "' is already compiled, so " + given +
                   (count == 1 ? " does" : " do") + " not apply to it; pass " +
                   (count == 1 ? "it" : "them") + " to 'onnxc compile', or " + command +
                   " the .onnx or .ir model");
}

} // namespace onnxc
