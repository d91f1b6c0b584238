//===- codegen/TargetSelection.cpp - Which CPU the generated code is for ---===//
#include "codegen/TargetSelection.h"

#include "ir/Error.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

#include <mutex>

namespace onnxc {

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

namespace {

const llvm::Target &hostTarget(const llvm::Triple &triple) {
  initializeNativeTarget();
  std::string message;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple.str(), message);
  if (!target)
    fail("no LLVM target for '", triple.str(), "': ", message);
  return *target;
}

/// The subtarget tables of the host triple, for validating names.
std::unique_ptr<llvm::MCSubtargetInfo> hostSubtargetInfo(const llvm::Triple &triple) {
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      hostTarget(triple).createMCSubtargetInfo(triple.str(), "", ""));
  if (!info)
    fail("LLVM has no subtarget information for '", triple.str(), "'");
  return info;
}

/// The valid name closest to `name`, to suggest when the user mistyped one.
template <typename Table> std::string closestName(llvm::StringRef name, const Table &table) {
  std::string best;
  unsigned bestDistance = ~0u;
  for (const auto &entry : table) {
    unsigned distance = name.edit_distance(entry.Key, true, bestDistance);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = entry.Key;
    }
  }
  return bestDistance <= 3 ? best : std::string();
}

template <typename Table> bool hasName(llvm::StringRef name, const Table &table) {
  for (const auto &entry : table)
    if (name == entry.Key)
      return true;
  return false;
}

std::string didYouMean(const std::string &suggestion) {
  return suggestion.empty() ? std::string() : "; did you mean '" + suggestion + "'?";
}

/// Checks a "+a,-b" list against the target's features and returns it
/// normalized (no blanks, no empty items).
std::string validateAttributes(const std::string &attributes, const llvm::MCSubtargetInfo &info,
                               const llvm::Triple &triple) {
  llvm::SmallVector<llvm::StringRef, 16> items;
  llvm::StringRef(attributes).split(items, ',', -1, false);
  std::string normalized;
  for (llvm::StringRef item : items) {
    item = item.trim();
    if (item.empty())
      continue;
    if (item[0] != '+' && item[0] != '-')
      fail("--mattr item '", item.str(), "' must start with '+' or '-' (e.g. +avx2,-fma)");
    llvm::StringRef name = item.drop_front();
    if (!hasName(name, info.getAllProcessorFeatures()))
      fail("unknown --mattr feature '", name.str(), "' for ", triple.str(),
           didYouMean(closestName(name, info.getAllProcessorFeatures())),
           " ('--mattr=help' lists the valid names)");
    normalized += (normalized.empty() ? "" : ",") + item.str();
  }
  return normalized;
}

std::string hostFeatureString() {
  std::string features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    features += (features.empty() ? "" : ",") + std::string(feature.second ? "+" : "-") +
                feature.first().str();
  return features;
}

} // namespace

TargetSelection TargetSelection::select(const TargetRequest &request) {
  TargetSelection selection;
  selection.triple_ = llvm::Triple(llvm::sys::getProcessTriple());
  std::unique_ptr<llvm::MCSubtargetInfo> info = hostSubtargetInfo(selection.triple_);

  std::string baseFeatures;
  if (request.cpu.empty() || request.cpu == "native") {
    selection.cpu_ = llvm::sys::getHostCPUName().str();
    baseFeatures = hostFeatureString();
  } else {
    selection.cpu_ = request.cpu;
  }
  if (!info->isCPUStringValid(selection.cpu_))
    fail("unknown --mcpu '", selection.cpu_, "' for ", selection.triple_.str(),
         didYouMean(closestName(selection.cpu_, info->getAllProcessorDescriptions())),
         " ('--mcpu=help' lists the valid names)");

  std::string extra = validateAttributes(request.attributes, *info, selection.triple_);
  // LLVM 19 splits 512-bit registers (evex512) from the AVX-512 instructions,
  // and a host without AVX-512 reports -evex512: +avx512f on top of it would
  // ask for AVX-512 without ZMM nor VL, which LLVM cannot select code for (an
  // abort in the backend). Clang turns evex512 on with any AVX-512 feature
  // unless told otherwise; so does this.
  if (extra.find("+avx512") != std::string::npos && extra.find("evex512") == std::string::npos)
    extra += ",+evex512";
  // Later items win in LLVM's feature strings, so user overrides go last.
  selection.features_ = baseFeatures;
  if (!extra.empty())
    selection.features_ += (selection.features_.empty() ? "" : ",") + extra;
  selection.resolvePrecision(request.precision);
  return selection;
}

const char *precisionName(Precision precision) {
  return precision == Precision::Bf16 ? "bf16" : "f32";
}

void TargetSelection::resolvePrecision(const std::string &requested) {
  if (requested == "f32" || requested.empty()) {
    precision_ = Precision::F32;
  } else if (requested == "bf16") {
    precision_ = Precision::Bf16;
  } else if (requested == "auto") {
    const bool amx = hasFeature("amx-bf16") && hasFeature("amx-tile") && hasFeature("avx512bf16");
    precision_ = amx ? Precision::Bf16 : Precision::F32;
    precisionReason_ =
        amx ? "auto: bf16, as the CPU has AMX-BF16" : "auto: f32, as the CPU has no AMX-BF16";
  } else {
    fail("unknown --precision '", requested, "' (f32, bf16 or auto)");
  }
}

bool TargetSelection::hasFeature(const std::string &feature) const {
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      hostTarget(triple_).createMCSubtargetInfo(triple_.str(), cpu_, features_));
  return info && info->checkFeatures("+" + feature);
}

std::vector<std::string>
TargetSelection::enabledFeatures(const std::vector<std::string> &candidates) const {
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      hostTarget(triple_).createMCSubtargetInfo(triple_.str(), cpu_, features_));
  std::vector<std::string> enabled;
  for (const std::string &feature : candidates)
    if (info && info->checkFeatures("+" + feature))
      enabled.push_back(feature);
  return enabled;
}

std::unique_ptr<llvm::TargetMachine> TargetSelection::createTargetMachine() const {
  const llvm::Target &target = hostTarget(triple_);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(
      target.createTargetMachine(triple_.str(), cpu_, features_, options, llvm::Reloc::PIC_,
                                 std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    fail("LLVM could not create a target machine for ", triple_.str(), " cpu '", cpu_, "'");
  return machine;
}

llvm::orc::JITTargetMachineBuilder TargetSelection::jitTargetMachineBuilder() const {
  initializeNativeTarget();
  llvm::orc::JITTargetMachineBuilder builder(triple_);
  builder.setCPU(cpu_);
  builder.setFeatures(features_);
  builder.setRelocationModel(llvm::Reloc::PIC_);
  builder.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  return builder;
}

void TargetSelection::configureModule(llvm::Module &module) const {
  module.setTargetTriple(triple_.str());
  module.setDataLayout(createTargetMachine()->createDataLayout());
}

std::vector<std::string> TargetSelection::availableCpus() {
  std::vector<std::string> names;
  for (const auto &cpu : hostSubtargetInfo(llvm::Triple(llvm::sys::getProcessTriple()))
                             ->getAllProcessorDescriptions())
    names.push_back(cpu.Key);
  return names;
}

std::vector<std::string> TargetSelection::availableFeatures() {
  std::vector<std::string> names;
  for (const auto &feature :
       hostSubtargetInfo(llvm::Triple(llvm::sys::getProcessTriple()))->getAllProcessorFeatures())
    names.push_back(feature.Key);
  return names;
}

} // namespace onnxc
