//===- codegen/TargetSelection.h - Which CPU the generated code is for -----===//
//
// Kernels are emitted for the host CPU by default ("native": its name and
// every feature it reports), or for a named CPU (--mcpu) with features
// added or removed (--mattr=+avx2,-fma). Names are checked against LLVM's
// tables for the target, so a typo is an error rather than a silent
// fallback to a baseline CPU. The JIT and the object emitter build their
// TargetMachines from the same selection, so both compile the same code.
//
// The selection also carries the arithmetic the matrix products run in
// (--precision): f32 (the default, what the reference computes), bf16
// (operands rounded to bfloat16, sums in f32: docs/KERNEL_ACCURACY.md), or
// auto, which resolves against the CPU's features.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
}

namespace onnxc {

/// What the user asked for on the command line.
struct TargetRequest {
  /// "native" (the host CPU), or an LLVM CPU name such as "x86-64",
  /// "x86-64-v3", "skylake-avx512".
  std::string cpu = "native";
  /// Comma-separated "+feature" / "-feature" list, applied after the CPU's
  /// own features ("native" includes the host's features).
  std::string attributes;
  /// "f32", "bf16" or "auto" (--precision).
  std::string precision = "f32";
};

/// The arithmetic of the matrix products.
enum class Precision { F32, Bf16 };
const char *precisionName(Precision precision);

/// A validated CPU + feature choice for the host's target triple.
class TargetSelection {
public:
  /// Validates `request` and resolves "native"; throws onnxc::Error naming
  /// an unknown CPU or feature.
  static TargetSelection select(const TargetRequest &request = {});
  /// The baseline x86-64 CPU with no extra features: runs on any x86-64.
  static TargetSelection genericX86_64() { return select({"x86-64", ""}); }

  const llvm::Triple &triple() const { return triple_; }
  const std::string &cpu() const { return cpu_; }
  /// The resolved feature string ("+avx2,+fma,-avx512f,..."): the host's
  /// for "native", then the --mattr overrides; empty for a named CPU without
  /// overrides (its features are implied by its name).
  const std::string &features() const { return features_; }
  /// Whether the code generated for this choice may use `feature` (e.g.
  /// "avx512f"): what the CPU implies, with the overrides applied as LLVM
  /// applies them (-avx512f also turns off avx512bw and the rest).
  bool hasFeature(const std::string &feature) const;
  /// The names among `candidates` that hasFeature accepts (one subtarget
  /// lookup for all of them).
  std::vector<std::string> enabledFeatures(const std::vector<std::string> &candidates) const;

  /// The precision asked for, with "auto" resolved: bf16 where the target
  /// has AMX-BF16, f32 elsewhere (the AVX512-BF16 kernel is not yet faster
  /// than the f32 one; docs/KERNEL_ACCURACY.md).
  Precision precision() const { return precision_; }
  /// Why precision() is what it is, for "auto" ("auto: bf16, the CPU has
  /// AMX-BF16"); empty when the user named it.
  const std::string &precisionReason() const { return precisionReason_; }

  /// A TargetMachine for ahead-of-time code: position independent (it goes
  /// into a shared library) and optimized at -O3.
  std::unique_ptr<llvm::TargetMachine> createTargetMachine() const;
  /// The same choice for ORC's LLJIT.
  llvm::orc::JITTargetMachineBuilder jitTargetMachineBuilder() const;
  /// Sets the module's triple and data layout; emitters need the layout
  /// before they lay out descriptor structs.
  void configureModule(llvm::Module &module) const;

  /// Every CPU name valid for the host triple (for --mcpu=help).
  static std::vector<std::string> availableCpus();
  /// Every feature name valid for the host triple (for --mattr=help).
  static std::vector<std::string> availableFeatures();

private:
  void resolvePrecision(const std::string &requested);

  llvm::Triple triple_;
  std::string cpu_;
  std::string features_;
  Precision precision_ = Precision::F32;
  std::string precisionReason_;
};

/// Registers the host target with LLVM once; safe to call from anywhere.
void initializeNativeTarget();

} // namespace onnxc
