//===- runtime/CpuFeatures.cpp - CPUID, XCR0 and the AMX permission -------===//
#include "CpuFeatures.h"

#include <cstdint>
#include <cstdlib>
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

/// Where CPUID reports a feature: the leaf, subleaf, register and bit, and
/// the XCR0 state bits the operating system must have enabled for it (0 for
/// the SSE-era features every x86-64 OS saves).
enum Register { Ebx, Ecx, Edx, Eax };
struct FeatureBit {
  const char *name;
  unsigned leaf, subleaf;
  Register reg;
  unsigned bit;
  uint64_t osState;
};

constexpr unsigned kExtended = 0x80000001;
constexpr uint64_t kAvxState = 0x6;                         // XMM, YMM
constexpr uint64_t kAvx512State = 0xe6;                     // + opmask, ZMM_Hi256, Hi16_ZMM
constexpr uint64_t kAmxState = (1ull << 17) | (1ull << 18); // XTILECFG, XTILEDATA

// The LLVM feature names whose instructions LLVM may emit for ordinary code
// (vector, bit manipulation and byte-swap instructions), as the Intel SDM
// and AMD's APM number their CPUID bits. Crypto and system features (aes,
// sha, rdrnd, ...) are left out: onnxc never asks for them, and LLVM emits
// them only for their intrinsics.
constexpr FeatureBit kFeatures[] = {
    {"sse3", 1, 0, Ecx, 0, 0},
    {"ssse3", 1, 0, Ecx, 9, 0},
    {"sse4.1", 1, 0, Ecx, 19, 0},
    {"sse4.2", 1, 0, Ecx, 20, 0},
    {"movbe", 1, 0, Ecx, 22, 0},
    {"popcnt", 1, 0, Ecx, 23, 0},
    {"avx", 1, 0, Ecx, 28, kAvxState},
    {"f16c", 1, 0, Ecx, 29, kAvxState},
    {"fma", 1, 0, Ecx, 12, kAvxState},
    {"lzcnt", kExtended, 0, Ecx, 5, 0},
    {"sse4a", kExtended, 0, Ecx, 6, 0},
    {"fma4", kExtended, 0, Ecx, 16, kAvxState},
    {"xop", kExtended, 0, Ecx, 11, kAvxState},
    {"bmi", 7, 0, Ebx, 3, 0},
    {"avx2", 7, 0, Ebx, 5, kAvxState},
    {"bmi2", 7, 0, Ebx, 8, 0},
    {"gfni", 7, 0, Ecx, 8, 0},
    {"vaes", 7, 0, Ecx, 9, kAvxState},
    {"vpclmulqdq", 7, 0, Ecx, 10, kAvxState},
    {"avx512f", 7, 0, Ebx, 16, kAvx512State},
    {"avx512dq", 7, 0, Ebx, 17, kAvx512State},
    {"avx512ifma", 7, 0, Ebx, 21, kAvx512State},
    {"avx512cd", 7, 0, Ebx, 28, kAvx512State},
    {"avx512bw", 7, 0, Ebx, 30, kAvx512State},
    {"avx512vl", 7, 0, Ebx, 31, kAvx512State},
    {"avx512vbmi", 7, 0, Ecx, 1, kAvx512State},
    {"avx512vbmi2", 7, 0, Ecx, 6, kAvx512State},
    {"avx512vnni", 7, 0, Ecx, 11, kAvx512State},
    {"avx512bitalg", 7, 0, Ecx, 12, kAvx512State},
    {"avx512vpopcntdq", 7, 0, Ecx, 14, kAvx512State},
    {"avx512fp16", 7, 0, Edx, 23, kAvx512State},
    {"avxvnni", 7, 1, Eax, 4, kAvxState},
    {"avx512bf16", 7, 1, Eax, 5, kAvx512State},
    {"avxifma", 7, 1, Eax, 23, kAvxState},
    {"avxvnniint8", 7, 1, Edx, 4, kAvxState},
    {"avxneconvert", 7, 1, Edx, 5, kAvxState},
    {"avxvnniint16", 7, 1, Edx, 10, kAvxState},
    {"amx-tile", 7, 0, Edx, 24, kAmxState},
    {"amx-bf16", 7, 0, Edx, 22, kAmxState},
    {"amx-int8", 7, 0, Edx, 25, kAmxState},
    {"amx-fp16", 7, 1, Eax, 21, kAmxState},
    {"amx-complex", 7, 1, Edx, 8, kAmxState},
};

#if defined(__x86_64__)
/// XCR0, the state components the OS saves; 0 when it cannot be read.
uint64_t osEnabledState() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) // OSXSAVE: XCR0 is readable
    return 0;
  uint32_t low = 0, high = 0;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (uint64_t(high) << 32) | low;
}

bool cpuHas(const FeatureBit &feature) {
  unsigned regs[4] = {0, 0, 0, 0}; // ebx, ecx, edx, eax
  // __get_cpuid_count checks the leaf against the CPU's highest one first.
  if (!__get_cpuid_count(feature.leaf, feature.subleaf, &regs[Eax], &regs[Ebx], &regs[Ecx],
                         &regs[Edx]))
    return false;
  if (!((regs[feature.reg] >> feature.bit) & 1))
    return false;
  return feature.osState == 0 || (osEnabledState() & feature.osState) == feature.osState;
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

/// Whether $ONNXC_HIDE_CPU_FEATURES names `name` (read at every check, so a
/// test can set it in the process it runs).
bool hidden(const std::string &name) {
  const char *list = std::getenv("ONNXC_HIDE_CPU_FEATURES");
  if (!list)
    return false;
  for (const std::string &item : featureNames(list))
    if (item == name)
      return true;
  return false;
}

std::vector<std::string> missingFeatures(const char *features, bool &amxNeeded) {
  std::vector<std::string> missing;
  amxNeeded = false;
  for (const std::string &name : featureNames(features)) {
    const FeatureBit *known = findFeature(name);
    if (!known || hidden(name) || !cpuHas(*known))
      missing.push_back(name);
    else
      amxNeeded = amxNeeded || isAmx(name);
  }
  return missing;
}

std::string joined(const std::vector<std::string> &names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += (i ? ", " : "") + names[i];
  return text;
}

bool anyAmx(const std::vector<std::string> &names) {
  for (const std::string &name : names)
    if (isAmx(name))
      return true;
  return false;
}

constexpr const char *kAmxRefused =
    "the operating system does not grant this process the AMX tile state "
    "(arch_prctl ARCH_REQ_XCOMP_PERM failed; Linux 5.16 or newer is needed)";

} // namespace

std::string checkCpuFeatures(const char *features) {
  if (!features || !*features)
    return "";
  bool amx = false;
  std::vector<std::string> missing = missingFeatures(features, amx);
  if (!missing.empty())
    return "this CPU lacks " + joined(missing) +
           (anyAmx(missing) ? " (or its operating system has not enabled it)" : "");
  if (amx && !amxPermitted())
    return kAmxRefused;
  return "";
}

std::string checkModelCpuFeatures(const onnxc_model_descriptor &model) {
  if (!model.cpu_features || !*model.cpu_features)
    return "";
  bool amx = false;
  std::vector<std::string> missing = missingFeatures(model.cpu_features, amx);
  std::string name = "model '" + std::string(model.model_name ? model.model_name : "?") + "'";
  if (missing.empty())
    return amx && !amxPermitted() ? name + ": " + kAmxRefused : "";
  bool lowPrecision = anyAmx(missing);
  for (const std::string &feature : missing)
    lowPrecision = lowPrecision || feature == "avx512bf16";
  return name + " needs " + joined(missing) + ", which this CPU lacks" +
         (anyAmx(missing) ? " (or its operating system has not enabled them)" : "") +
         " (compile it for this CPU: --mcpu=native" + (lowPrecision ? ", --precision=f32" : "") +
         "; or for every machine it may run on, e.g. --mcpu=x86-64-v3 for AVX2 ones)";
}

const char *checkableCpuFeatures() {
  // A plain array, not a std::string: the runtime registers no static
  // destructor (a model.so linked by lld runs no __cxa_finalize at dlclose).
  static char list[sizeof kFeatures / sizeof kFeatures[0] * 20];
  static const bool filled = [] {
    size_t length = 0;
    for (const FeatureBit &feature : kFeatures) {
      size_t size = std::strlen(feature.name);
      if (length + size + 2 > sizeof list)
        break;
      if (length)
        list[length++] = ',';
      std::memcpy(list + length, feature.name, size);
      length += size;
    }
    list[length] = 0;
    return true;
  }();
  (void)filled;
  return list;
}

} // namespace onnxc::runtime
