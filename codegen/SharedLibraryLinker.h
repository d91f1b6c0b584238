//===- codegen/SharedLibraryLinker.h - model.o + runtime -> model.so -------===//
//
// A compiled model is a self-contained shared library: the model's object
// (kernels, pre-packed weights as constant data, the descriptor) linked with
// the whole runtime archive, so a C program needs only model.so and the
// generated header. Linking goes through the system's C++ compiler driver
// (it knows where libstdc++ and the C runtime live); a version script keeps
// the exports to the descriptor accessors and the onnxc.h API.
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
  /// libonnxc_runtime.a (built position independent); empty: the archive of
  /// this build (defaultRuntimeArchive()).
  std::string runtimeArchive;
  /// Compiler driver; empty: findCompilerDriver().
  std::string driver;
};

/// Links `request.objectPath` into a shared library. Throws onnxc::Error
/// naming the command and quoting the linker's first error line on failure.
void linkSharedLibrary(const LinkRequest &request);

/// The C++ driver used to link: $ONNXC_CXX, else $CXX, else the first of
/// c++, g++, clang++ on PATH. Throws onnxc::Error when there is none.
std::string findCompilerDriver();

/// The runtime archive this compiler was built with.
std::string defaultRuntimeArchive();

/// The flags linking that archive needs: -fsanitize=... in a sanitized build
/// (CMake's ONNXC_SANITIZE), else empty.
std::string defaultRuntimeLinkFlags();

} // namespace onnxc
