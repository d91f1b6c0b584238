//===- runtime/CpuFeatures.cpp - CPUID, XCR0 and the AMX permission -------===//
#include "CpuFeatures.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace onnxc::runtime {
namespace {

/// Where CPUID reports a feature: leaf 7's subleaf, register and bit, and
/// the XCR0 state bits the operating system must have enabled for it.
enum Register { Ebx, Ecx, Edx, Eax };
struct FeatureBit {
  const char *name;
  unsigned leaf, subleaf;
  Register reg;
  unsigned bit;
  uint64_t osState;
};

constexpr uint64_t kAvxState = 0x6;                         // XMM, YMM
constexpr uint64_t kAvx512State = 0xe6;                     // + opmask, ZMM_Hi256, Hi16_ZMM
constexpr uint64_t kAmxState = (1ull << 17) | (1ull << 18); // XTILECFG, XTILEDATA

constexpr FeatureBit kFeatures[] = {
    {"fma", 1, 0, Ecx, 12, kAvxState},         {"avx2", 7, 0, Ebx, 5, kAvxState},
    {"avx512f", 7, 0, Ebx, 16, kAvx512State},  {"avx512bw", 7, 0, Ebx, 30, kAvx512State},
    {"avx512vl", 7, 0, Ebx, 31, kAvx512State}, {"avx512vnni", 7, 0, Ecx, 11, kAvx512State},
    {"avxvnni", 7, 1, Eax, 4, kAvxState},      {"avx512bf16", 7, 1, Eax, 5, kAvx512State},
    {"amx-tile", 7, 0, Edx, 24, kAmxState},    {"amx-bf16", 7, 0, Edx, 22, kAmxState},
    {"amx-int8", 7, 0, Edx, 25, kAmxState},
};

#if defined(__x86_64__)
bool cpuHas(const FeatureBit &feature) {
  unsigned regs[4] = {0, 0, 0, 0}; // ebx, ecx, edx, eax
  if (!__get_cpuid_count(feature.leaf, feature.subleaf, &regs[Eax], &regs[Ebx], &regs[Ecx],
                         &regs[Edx]))
    return false;
  if (!((regs[feature.reg] >> feature.bit) & 1))
    return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) // OSXSAVE: XCR0 is readable
    return false;
  uint32_t low = 0, high = 0;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  const uint64_t xcr0 = (uint64_t(high) << 32) | low;
  return (xcr0 & feature.osState) == feature.osState;
}

/// Linux grants a process the AMX tile data state only when asked
/// (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); asked once.
bool amxPermitted() {
  static const bool granted = [] {
    constexpr long kRequestPermission = 0x1023, kTileData = 18;
    return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
  }();
  return granted;
}
#else
bool cpuHas(const FeatureBit &) { return false; }
bool amxPermitted() { return false; }
#endif

bool isAmx(const std::string &name) { return name.rfind("amx-", 0) == 0; }

const FeatureBit *findFeature(const std::string &name) {
  for (const FeatureBit &feature : kFeatures)
    if (name == feature.name)
      return &feature;
  return nullptr;
}

/// The names of a comma-separated list, empty ones dropped.
std::vector<std::string> featureNames(const char *list) {
  std::vector<std::string> names;
  std::string name;
  for (const char *c = list;; ++c) {
    if (*c == ',' || *c == 0) {
      if (!name.empty())
        names.push_back(name);
      name.clear();
      if (*c == 0)
        return names;
    } else {
      name += *c;
    }
  }
}

std::string missingMessage(const std::vector<std::string> &missing) {
  std::string message = "this CPU lacks ";
  bool amx = false;
  for (size_t i = 0; i < missing.size(); ++i) {
    message += (i ? ", " : "") + missing[i];
    amx = amx || isAmx(missing[i]);
  }
  if (amx)
    message += " (or its operating system has not enabled it)";
  return message;
}

} // namespace

std::string checkCpuFeatures(const char *features) {
  if (!features || !*features)
    return "";
  std::vector<std::string> missing;
  bool amx = false;
  for (const std::string &name : featureNames(features)) {
    const FeatureBit *known = findFeature(name);
    if (!known || !cpuHas(*known))
      missing.push_back(name);
    else
      amx = amx || isAmx(name);
  }
  if (!missing.empty())
    return missingMessage(missing);
  if (amx && !amxPermitted())
    return "the operating system does not grant this process the AMX tile state "
           "(arch_prctl ARCH_REQ_XCOMP_PERM failed; Linux 5.16 or newer is needed)";
  return "";
}

} // namespace onnxc::runtime
