//===- codegen/artifact/SharedLibraryLinker.cpp - model.o + runtime -> model.so -===//
#include "codegen/artifact/SharedLibraryLinker.h"

#include "codegen/artifact/InProcessLinker.h"
#include "codegen/artifact/RuntimeFiles.h"
#include "ir/Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

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

/// Exports the accessors and the C API (onnxc.h, model_info.h and
/// onnxc_generate.h), so a C program links model.so alone; `local: *` hides
/// everything else the runtime archive brings in (its C++ internals, helper
/// symbols).
void writeVersionScript(const std::string &path, const std::vector<std::string> &symbols) {
  std::error_code error;
  llvm::raw_fd_ostream out(path, error, llvm::sys::fs::OF_Text);
  if (error)
    fail("cannot write the export list '", path, "': ", error.message());
  out << "{\n  global:\n";
  for (const std::string &symbol : symbols)
    out << "    " << symbol << ";\n";
  for (const char *api :
       {"onnxc_session_*", "onnxc_last_error", "onnxc_model_check*", "onnxc_dim_*",
        "onnxc_cpu_features_checked", "onnxc_generate*", "onnxc_generator_*"})
    out << "    " << api << ";\n";
  out << "  local:\n    *;\n};\n";
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

/// The driver, or empty when there is none (findCompilerDriver without the error).
std::string compilerDriverIfAny() {
  for (const char *variable : {"ONNXC_CXX", "CXX"})
    if (const char *value = std::getenv(variable); value && *value)
      return value;
  for (const char *candidate : {"c++", "g++", "clang++"})
    if (llvm::sys::findProgramByName(candidate))
      return candidate;
  return "";
}

constexpr const char *NoDriverMessage =
    "no C++ compiler driver found (tried $ONNXC_CXX, $CXX, c++, g++, clang++)";

/// What links this request, and why lld does not when it does not.
struct LinkerDecision {
  Linker linker = Linker::CompilerDriver;
  /// Why the in-process linker is not used (empty when it is).
  std::string whyNotLld;
  /// The system libraries lld links (when linker is InProcessLld).
  std::vector<std::string> libraries;
};

LinkerDecision decideLinker(const LinkRequest &request) {
  Linker wanted = linkerFromEnvironment();
  LinkerDecision decision;
  if (!request.driver.empty() || wanted == Linker::CompilerDriver) {
    decision.whyNotLld = "the compiler driver was asked for";
    return decision;
  }
  if (!inProcessLinkerBuiltIn())
    decision.whyNotLld = "this onnxc was built without lld (liblld-19-dev)";
  else if (!inProcessLinkerUsable())
    decision.whyNotLld = "lld cannot run again in this process after a crash inside it";
  else if (request.runtimeArchive.empty() && !defaultRuntimeLinkFlags().empty())
    // A sanitized runtime needs the sanitizers' runtimes, which only the
    // compiler driver knows how to add.
    decision.whyNotLld = "the runtime is sanitized (" + defaultRuntimeLinkFlags() + ")";
  if (decision.whyNotLld.empty()) {
    std::vector<std::string> missing;
    decision.libraries = systemLinkLibraries(missing);
    if (missing.empty()) {
      decision.linker = Linker::InProcessLld;
      return decision;
    }
    std::string names;
    for (const std::string &name : missing)
      names += (names.empty() ? "" : ", ") + name;
    decision.whyNotLld = "lld needs " + names +
                         ", not found among this process's libraries nor in the dynamic "
                         "loader's folders (/etc/ld.so.conf.d, /lib, /usr/lib)";
  }
  if (wanted == Linker::InProcessLld)
    fail("cannot link '", request.outputPath,
         "' in process (ONNXC_LINKER=lld): ", decision.whyNotLld);
  return decision;
}

void linkWithLld(const LinkRequest &request, const std::string &archive,
                 const std::string &versionScript, const std::vector<std::string> &libraries) {
  // What the C++ driver passes ld for -shared, minus crti/crtbeginS, which
  // are part of the compiler, not of the system (lld defines __dso_handle
  // itself; .init_array needs no _init). --eh-frame-hdr lets the unwinder
  // find the runtime's exception tables without crtbeginS's registration.
  // crtbeginS would also run __cxa_finalize at dlclose; the runtime registers
  // no static destructors, so there is nothing to finalize (a unit test,
  // InProcessLinker.LinksTwiceInOneProcessAndMatchesTheDriver, keeps it so).
  // The weights are in .lrodata (DescriptorEmitter.h): after .bss, as GNU
  // ld's default script places it, lld's default (before .rodata) would put
  // gigabytes of them between the image's start (__dso_handle) and the code
  // that refers to it with 32-bit offsets.
  std::vector<std::string> arguments = {"-shared",
                                        "-o",
                                        request.outputPath,
                                        "--build-id",
                                        "--eh-frame-hdr",
                                        "--hash-style=gnu",
                                        "-z",
                                        "relro",
                                        "-z",
                                        "noexecstack",
                                        "-z",
                                        "lrodata-after-bss",
                                        "-O1",
                                        "--no-undefined",
                                        request.objectPath};
  arguments.insert(arguments.end(), request.extraObjects.begin(), request.extraObjects.end());
  for (std::string argument :
       {std::string("--whole-archive"), archive, std::string("--no-whole-archive"),
        "--version-script=" + versionScript, std::string("--as-needed")})
    arguments.push_back(std::move(argument));
  arguments.insert(arguments.end(), libraries.begin(), libraries.end());
  InProcessLinkResult result = linkInProcess(arguments);
  if (result.succeeded)
    return;
  fail("linking '", request.outputPath,
       "' failed (lld in process): ", firstErrorLine(result.messages), " [command: ld.lld ",
       joinCommand(arguments), "]");
}

void linkWithDriver(const LinkRequest &request, const std::string &archive,
                    const std::string &versionScript, const std::string &driver) {
  TemporaryFile linkerOutput("onnxc-link", "txt");
  std::vector<std::string> arguments = driverCommand(driver);
  // --whole-archive: nothing in the model object calls the C API, yet it must
  // be in the library for programs that do. --no-undefined turns a missing
  // symbol into a link error here instead of a dlopen error on the user's side.
  // The archive of a sanitized build calls into the sanitizers' runtimes: the
  // same -fsanitize flags make the driver link them (as shared libraries).
  if (request.runtimeArchive.empty())
    for (const std::string &flag : splitWords(defaultRuntimeLinkFlags()))
      arguments.push_back(flag);
  for (const std::string &argument :
       {std::string("-shared"), std::string("-o"), request.outputPath, request.objectPath})
    arguments.push_back(argument);
  arguments.insert(arguments.end(), request.extraObjects.begin(), request.extraObjects.end());
  for (const std::string &argument :
       {std::string("-Wl,--whole-archive"), archive, std::string("-Wl,--no-whole-archive"),
        "-Wl,--version-script=" + versionScript, std::string("-Wl,--no-undefined"),
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

} // namespace

Linker linkerFromEnvironment() {
  const char *value = std::getenv("ONNXC_LINKER");
  llvm::StringRef name = value ? llvm::StringRef(value).trim() : "";
  if (name.empty() || name == "auto")
    return Linker::Auto;
  if (name == "lld")
    return Linker::InProcessLld;
  if (name == "driver" || name == "c++" || name == "cc")
    return Linker::CompilerDriver;
  fail("ONNXC_LINKER='", name.str(), "' is not a linker (use lld, driver or auto)");
}

std::string findCompilerDriver() {
  std::string driver = compilerDriverIfAny();
  if (driver.empty())
    fail(NoDriverMessage, " to link model.so; install g++ or set ONNXC_CXX");
  return driver;
}

std::string defaultRuntimeArchive() { return findRuntimeFiles().archive; }

std::string defaultRuntimeLinkFlags() { return ONNXC_RUNTIME_LINK_FLAGS; }

Linker linkSharedLibrary(const LinkRequest &request) {
  std::string archive =
      request.runtimeArchive.empty() ? defaultRuntimeArchive() : request.runtimeArchive;
  if (!llvm::sys::fs::exists(archive))
    fail("the runtime archive '", archive, "' does not exist (build the onnxc_runtime target)");
  if (!llvm::sys::fs::exists(request.objectPath))
    fail("the model object '", request.objectPath, "' does not exist");

  TemporaryFile versionScript("onnxc-exports", "map");
  writeVersionScript(versionScript.path.str().str(), request.exportedSymbols);
  LinkerDecision decision = decideLinker(request);
  if (decision.linker == Linker::InProcessLld) {
    linkWithLld(request, archive, versionScript.path.str().str(), decision.libraries);
    return Linker::InProcessLld;
  }
  std::string driver = request.driver.empty() ? compilerDriverIfAny() : request.driver;
  if (driver.empty())
    fail("cannot link '", request.outputPath, "': ", decision.whyNotLld, ", and ", NoDriverMessage,
         "; install g++ (or set ONNXC_CXX)",
         inProcessLinkerBuiltIn() ? "" : ", or rebuild onnxc with liblld-19-dev installed");
  linkWithDriver(request, archive, versionScript.path.str().str(), driver);
  return Linker::CompilerDriver;
}

} // namespace onnxc
