//===- runtime/CpuFeatures.h - The CPU features a compiled model's code needs -===//
//
// A model compiled for one CPU may be run on another: a .so built with
// --mcpu=native on an AVX-512 machine and copied to an AVX2 one, or code that
// uses AMX on a kernel that has not granted the process the tile state.
// Executing an instruction the CPU or the operating system does not offer
// kills the process (SIGILL), so a session first checks every feature its
// model's code may use (the descriptor's cpu_features: every feature of the
// compile target that this file can check) and refuses in one line naming
// the missing ones. AMX also needs a request to Linux (arch_prctl
// ARCH_REQ_XCOMP_PERM for XTILEDATA) before the first tile instruction of the
// process; the check makes it, once.
//
// This file is the one place that decides: Session::create, the C API
// (onnxc_model_check_cpu) and codegen's list of what to record
// (onnxc_cpu_features_checked) all come here.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/model_abi.h"

#include <string>

namespace onnxc::runtime {

/// Checks the comma-separated LLVM feature names in `features` (null or
/// empty: none) against this CPU and OS, enabling AMX tile state when one
/// is named. Returns "" when all are there, else a message naming what is
/// missing ("this CPU lacks amx-bf16, amx-tile"). A name this runtime does
/// not know is missing. The features named in $ONNXC_HIDE_CPU_FEATURES
/// (comma-separated) count as missing: a test's stand-in for an older CPU.
/// Thread-safe.
std::string checkCpuFeatures(const char *features);

/// The one-line refusal of a model whose cpu_features this CPU lacks ("model
/// 'gpt2' needs avx512f, avx512bw, which this CPU lacks (...)"), or "".
std::string checkModelCpuFeatures(const onnxc_model_descriptor &model);

/// Every feature name checkCpuFeatures knows, comma-separated.
const char *checkableCpuFeatures();

} // namespace onnxc::runtime
