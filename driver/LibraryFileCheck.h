//===- driver/LibraryFileCheck.h - Is this file a model.so we can map? ----===//
//
// dlopen trusts the ELF file it maps: a model.so cut short by a full disk or
// an interrupted copy has program headers promising bytes past the end of
// the file, and touching those pages raises SIGBUS inside the loader. A
// foreign library runs its constructors before we can look for our symbol.
// So the opened file is read with plain reads first, and refused with one
// line unless it is a whole x86-64 shared object exporting the onnxc
// descriptor accessor.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace onnxc {

/// Checks the file open on `fd` (shown to the user as `path`): a regular
/// file holding a 64-bit little-endian x86-64 ELF shared object whose
/// program and section headers, segments and sections lie inside the file,
/// with a defined dynamic symbol `accessor`. Throws onnxc::Error naming
/// `path` and the first problem.
void checkModelLibraryFile(int fd, const std::string &path, const std::string &accessor);

} // namespace onnxc
