//===- codegen/SharedLibraryLinker.cpp - model.o + runtime -> model.so -----===//
#include "codegen/SharedLibraryLinker.h"

#include "ir/Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

#ifndef ONNXC_RUNTIME_ARCHIVE
#error "codegen/CMakeLists.txt defines ONNXC_RUNTIME_ARCHIVE as the path of libonnxc_runtime.a"
#endif
#ifndef ONNXC_RUNTIME_LINK_FLAGS
#error "codegen/CMakeLists.txt defines ONNXC_RUNTIME_LINK_FLAGS (the sanitizer flags, or empty)"
#endif

namespace onnxc {

namespace {

std::vector<std::string> splitWords(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef, 4> words;
  text.split(words, ' ', -1, false);
  return {words.begin(), words.end()};
}

/// The driver as program path + leading arguments ($CXX may be "ccache g++").
std::vector<std::string> driverCommand(const std::string &driver) {
  std::vector<std::string> words = splitWords(driver);
  if (words.empty())
    fail("the compiler driver for linking model.so is empty");
  if (!llvm::StringRef(words[0]).contains('/')) {
    llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(words[0]);
    if (!path)
      fail("cannot find the compiler driver '", words[0], "' on PATH to link model.so");
    words[0] = *path;
  }
  return words;
}

/// A temporary file removed when this object goes out of scope.
struct TemporaryFile {
  TemporaryFile(const char *prefix, const char *suffix) {
    if (std::error_code error = llvm::sys::fs::createTemporaryFile(prefix, suffix, path))
      fail("cannot create a temporary file: ", error.message());
    remover.setFile(path);
  }
  llvm::SmallString<128> path;
  llvm::FileRemover remover;
};

/// Exports the accessors and the C API; `local: *` hides everything else the
/// runtime archive brings in (its C++ internals, helper symbols).
void writeVersionScript(const std::string &path, const std::vector<std::string> &symbols) {
  std::error_code error;
  llvm::raw_fd_ostream out(path, error, llvm::sys::fs::OF_Text);
  if (error)
    fail("cannot write the export list '", path, "': ", error.message());
  out << "{\n  global:\n";
  for (const std::string &symbol : symbols)
    out << "    " << symbol << ";\n";
  out << "    onnxc_session_*;\n    onnxc_last_error;\n  local:\n    *;\n};\n";
}

/// The linker's first line that looks like an error, else its first line.
std::string firstErrorLine(llvm::StringRef output) {
  llvm::SmallVector<llvm::StringRef, 16> lines;
  output.split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    std::string lower = line.lower();
    if (llvm::StringRef(lower).contains("error") || llvm::StringRef(lower).contains("undefined") ||
        llvm::StringRef(lower).contains("cannot find"))
      return line.trim().str();
  }
  return lines.empty() ? std::string("(no output)") : lines.front().trim().str();
}

std::string joinCommand(const std::vector<std::string> &arguments) {
  std::string command;
  for (const std::string &argument : arguments)
    command += (command.empty() ? "" : " ") + argument;
  return command;
}

} // namespace

std::string findCompilerDriver() {
  for (const char *variable : {"ONNXC_CXX", "CXX"})
    if (const char *value = std::getenv(variable); value && *value)
      return value;
  for (const char *candidate : {"c++", "g++", "clang++"})
    if (llvm::sys::findProgramByName(candidate))
      return candidate;
  fail("no C++ compiler driver found to link model.so (tried $ONNXC_CXX, $CXX, c++, g++, "
       "clang++); install g++ or set ONNXC_CXX");
}

std::string defaultRuntimeArchive() { return ONNXC_RUNTIME_ARCHIVE; }

std::string defaultRuntimeLinkFlags() { return ONNXC_RUNTIME_LINK_FLAGS; }

void linkSharedLibrary(const LinkRequest &request) {
  std::string archive =
      request.runtimeArchive.empty() ? defaultRuntimeArchive() : request.runtimeArchive;
  if (!llvm::sys::fs::exists(archive))
    fail("the runtime archive '", archive, "' does not exist (build the onnxc_runtime target)");
  if (!llvm::sys::fs::exists(request.objectPath))
    fail("the model object '", request.objectPath, "' does not exist");

  TemporaryFile versionScript("onnxc-exports", "map");
  writeVersionScript(versionScript.path.str().str(), request.exportedSymbols);
  TemporaryFile linkerOutput("onnxc-link", "txt");

  std::vector<std::string> arguments =
      driverCommand(request.driver.empty() ? findCompilerDriver() : request.driver);
  // --whole-archive: nothing in the model object calls the C API, yet it must
  // be in the library for programs that do. --no-undefined turns a missing
  // symbol into a link error here instead of a dlopen error on the user's side.
  // The archive of a sanitized build calls into the sanitizers' runtimes: the
  // same -fsanitize flags make the driver link them (as shared libraries).
  if (request.runtimeArchive.empty())
    for (const std::string &flag : splitWords(defaultRuntimeLinkFlags()))
      arguments.push_back(flag);
  for (const std::string &argument :
       {std::string("-shared"), std::string("-o"), request.outputPath, request.objectPath,
        std::string("-Wl,--whole-archive"), archive, std::string("-Wl,--no-whole-archive"),
        "-Wl,--version-script=" + versionScript.path.str().str(), std::string("-Wl,--no-undefined"),
        std::string("-Wl,-z,noexecstack"), std::string("-Wl,-O1"), std::string("-pthread"),
        std::string("-lm")})
    arguments.push_back(argument);

  std::vector<llvm::StringRef> argumentRefs(arguments.begin(), arguments.end());
  llvm::StringRef output = linkerOutput.path.str();
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, output, output};
  std::string launchError;
  int status = llvm::sys::ExecuteAndWait(arguments[0], argumentRefs, std::nullopt, redirects, 0, 0,
                                         &launchError);
  if (status == 0)
    return;
  std::string command = joinCommand(arguments);
  if (status < 0)
    fail("cannot run '", command, "': ", launchError);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> log =
      llvm::MemoryBuffer::getFile(linkerOutput.path);
  std::string firstLine = log ? firstErrorLine((*log)->getBuffer()) : "(linker output lost)";
  fail("linking '", request.outputPath, "' failed (exit ", status, "): ", firstLine,
       " [command: ", command, "]");
}

} // namespace onnxc
