//===- codegen/artifact/SharedLibraryLinker.h - model.o + runtime -> model.so -===//
//
// A compiled model is a self-contained shared library: the model's object
// (kernels, pre-packed weights as constant data, the descriptor) linked with
// the whole runtime archive, so a C program needs only model.so and the
// generated header. Linking runs LLVM's lld inside this process
// (InProcessLinker.h: no C++ compiler needed on the machine), or the system's
// C++ compiler driver when lld is not built in, the runtime is sanitized, or
// ONNXC_LINKER=driver asks for it; a version script keeps the exports to the
// descriptor accessors and the onnxc.h API.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace onnxc {

struct LinkRequest {
  std::string objectPath;
  std::string outputPath;
  /// Symbols of the model object to export (the descriptor accessors); the
  /// runtime's onnxc_session_* and onnxc_last_error are always exported.
  std::vector<std::string> exportedSymbols;
  /// libonnxc_runtime.a (built position independent); empty: the archive
  /// next to this compiler (defaultRuntimeArchive()).
  std::string runtimeArchive;
  /// Compiler driver to link with (forces the driver); empty: lld in process,
  /// else findCompilerDriver().
  std::string driver;
  /// More objects to link after objectPath (the weights object, WeightsObject.h).
  std::vector<std::string> extraObjects;
};

/// Which linker links a model.so. $ONNXC_LINKER chooses: `lld` (in process,
/// an error when it cannot be used), `driver` (the C++ compiler driver), or
/// `auto`/unset (lld when it can be used, else the driver).
enum class Linker { Auto, InProcessLld, CompilerDriver };

/// $ONNXC_LINKER as a Linker; throws onnxc::Error on an unknown value.
Linker linkerFromEnvironment();

/// Links `request.objectPath` into a shared library and returns the linker
/// that did it. Throws onnxc::Error naming the command and quoting the
/// linker's first error line on failure, or naming what is missing (lld, the
/// system libraries it links, a compiler driver) when nothing can link.
Linker linkSharedLibrary(const LinkRequest &request);

/// The C++ driver used to link: $ONNXC_CXX, else $CXX, else the first of
/// c++, g++, clang++ on PATH. Throws onnxc::Error when there is none.
std::string findCompilerDriver();

/// The runtime archive next to this compiler (RuntimeFiles.h: the installed
/// prefix, else the build tree). Throws onnxc::Error when there is none.
std::string defaultRuntimeArchive();

/// The flags linking that archive needs: -fsanitize=... in a sanitized build
/// (CMake's ONNXC_SANITIZE), else empty.
std::string defaultRuntimeLinkFlags();

} // namespace onnxc
