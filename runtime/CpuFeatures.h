//===- runtime/CpuFeatures.h - The CPU features a compiled model's code needs -===//
//
// A model compiled for one CPU may be run on another: a .so copied to an
// older machine, or code that uses AMX on a kernel that has not granted the
// process the tile state. Executing an instruction the CPU or the operating
// system does not offer kills the process (SIGILL), so a session first checks
// every feature its model's code needs (the descriptor's cpu_features) and
// refuses in one line naming the missing ones. AMX also needs a request to
// Linux (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA) before the first tile
// instruction of the process; the check makes it, once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace onnxc::runtime {

/// Checks the comma-separated LLVM feature names in `features` (null or
/// empty: none) against this CPU and OS, enabling AMX tile state when one
/// is named. Returns "" when all are there, else a message naming what is
/// missing ("this CPU lacks amx-bf16, amx-tile"). A name this runtime does
/// not know is missing. Thread-safe.
std::string checkCpuFeatures(const char *features);

} // namespace onnxc::runtime
