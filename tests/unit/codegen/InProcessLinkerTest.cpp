//===- tests/unit/codegen/InProcessLinkerTest.cpp - model.so linked by lld, in process ===//
#include "CodegenAotTestSupport.h"

#include "codegen/artifact/InProcessLinker.h"
#include "codegen/artifact/ObjectEmitter.h"
#include "codegen/artifact/RuntimeFiles.h"
#include "codegen/artifact/SharedLibraryLinker.h"
#include "ir/Error.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <iterator>
#include <optional>

using namespace onnxc;
using namespace onnxc::aottest;

namespace {

/// Sets an environment variable for one scope (unset when `value` is empty).
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value.empty())
      unsetenv(name);
    else
      setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

using Accessor = const onnxc_model_descriptor *(*)();

/// Emits `name`'s object into `dir`; returns its path.
std::string emitTinyObject(const TargetSelection &target, const std::string &name,
                           const ScratchDir &dir, std::string &accessor) {
  TinyModel model = buildTinyModel(target, name);
  std::string object = dir / (name + ".o");
  emitModule(*model.module, target, EmitKind::Object, object);
  accessor = model.accessor;
  return object;
}

/// dlopens `library`, runs its model on a few batches and compares by hand.
void expectLibraryComputes(const std::string &library, const std::string &accessorName) {
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto accessor = reinterpret_cast<Accessor>(dlsym(handle, accessorName.c_str()));
  ASSERT_NE(accessor, nullptr) << accessorName;
  for (int64_t batch : {1, 5}) {
    std::vector<float> x = sampleInput(batch);
    EXPECT_EQ(runByHand(*accessor(), x, batch), expectedOutput(x)) << library << " batch " << batch;
  }
  dlclose(handle);
}

bool lldUsableHere() { return inProcessLinkerBuiltIn() && defaultRuntimeLinkFlags().empty(); }

} // namespace

TEST(InProcessLinker, TheRuntimeIsFoundNextToTheCompiler) {
  RuntimeFiles files = findRuntimeFiles();
  EXPECT_TRUE(llvm::sys::fs::is_regular_file(files.archive)) << files.archive;
  EXPECT_EQ(llvm::sys::path::filename(files.archive), "libonnxc_runtime.a");
  EXPECT_TRUE(llvm::sys::fs::is_regular_file(files.includeDir + "/onnxc/onnxc.h"))
      << files.includeDir;
  EXPECT_TRUE(llvm::sys::fs::is_regular_file(files.includeDir + "/onnxc/model_abi.h"));
  // The unit-test binary is not in an installed bin/: the installed layout is
  // looked at first and the build tree's archive last.
  std::vector<std::string> candidates = runtimeArchiveCandidates();
  ASSERT_GE(candidates.size(), 2u);
  EXPECT_EQ(candidates.back(), files.archive);
  EXPECT_FALSE(compilerImagePath().empty());
}

TEST(InProcessLinker, FindsTheSystemLibrariesAModelNeeds) {
  std::vector<std::string> missing;
  std::vector<std::string> libraries = systemLinkLibraries(missing);
  EXPECT_TRUE(missing.empty()) << missing.front();
  for (const char *soname : {"libstdc++.so.6", "libgcc_s.so.1", "libc.so.6"}) {
    bool found = false;
    for (const std::string &path : libraries)
      found |= llvm::sys::path::filename(path) == soname && llvm::sys::fs::exists(path);
    EXPECT_TRUE(found) << soname;
  }
}

// The Python package compiles many models in one process: lld's global state
// must be reset between links. Two links in a row, both libraries loaded at
// once and run; then the driver links the same object and agrees.
TEST(InProcessLinker, LinksTwiceInOneProcessAndMatchesTheDriver) {
  if (!lldUsableHere())
    GTEST_SKIP() << "lld not built in, or a sanitized runtime (linked by the driver)";
  ScratchDir dir("onnxc-lld");
  TargetSelection target = TargetSelection::select();
  ScopedEnv linker("ONNXC_LINKER", "lld");
  std::string firstAccessor, secondAccessor;
  std::string first = emitTinyObject(target, "first", dir, firstAccessor);
  std::string second = emitTinyObject(target, "second", dir, secondAccessor);

  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(linkSharedLibrary({first, dir / "first.so", {firstAccessor}, "", "", {}}),
            Linker::InProcessLld);
  double lldSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(linkSharedLibrary({second, dir / "second.so", {secondAccessor}, "", "", {}}),
            Linker::InProcessLld);
  EXPECT_TRUE(inProcessLinkerUsable());
  // lld links no crtbeginS.o, whose destructor would run __cxa_finalize for
  // this library at dlclose: a runtime static object with a destructor
  // (registered with __cxa_atexit) would then be called after the library is
  // unloaded. The runtime has none; this fails the day it gets one.
  std::string undefined = dir / "undefined.txt";
  std::string command = "nm -D --undefined-only " + dir / "first.so" + " > " + undefined;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream listing(undefined);
  std::string symbols((std::istreambuf_iterator<char>(listing)), std::istreambuf_iterator<char>());
  EXPECT_EQ(symbols.find("__cxa_atexit"), std::string::npos) << symbols;
  void *keepFirst = dlopen((dir / "first.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(keepFirst, nullptr) << dlerror();
  expectLibraryComputes(dir / "second.so", secondAccessor);
  expectLibraryComputes(dir / "first.so", firstAccessor);
  dlclose(keepFirst);

  if (llvm::sys::findProgramByName("c++")) {
    ScopedEnv driver("ONNXC_LINKER", "driver");
    start = std::chrono::steady_clock::now();
    EXPECT_EQ(linkSharedLibrary({first, dir / "first-driver.so", {firstAccessor}, "", "", {}}),
              Linker::CompilerDriver);
    double driverSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[ measure  ] link of a tiny model: lld in process %.3f s, c++ driver %.3f s\n",
                lldSeconds, driverSeconds);
    expectLibraryComputes(dir / "first-driver.so", firstAccessor);
  }
}

TEST(InProcessLinker, LinkErrorsNameLldAndTheFirstError) {
  if (!lldUsableHere())
    GTEST_SKIP() << "lld not built in, or a sanitized runtime";
  ScratchDir dir("onnxc-lld");
  ScopedEnv linker("ONNXC_LINKER", "lld");
  TargetSelection target = TargetSelection::select();
  std::string accessor;
  std::string object = emitTinyObject(target, "tiny", dir, accessor);
  try {
    // A runtime archive that is not there is named before lld runs.
    linkSharedLibrary({object, dir / "tiny.so", {accessor}, dir / "no-such-runtime.a", "", {}});
    FAIL() << "linking with a missing runtime archive succeeded";
  } catch (const Error &error) {
    std::string message = error.what();
    EXPECT_NE(message.find("no-such-runtime.a"), std::string::npos) << message;
  }
  std::ofstream(dir / "garbage.o") << "not an object file\n";
  try {
    linkSharedLibrary({dir / "garbage.o", dir / "garbage.so", {}, "", "", {}});
    FAIL() << "linking garbage succeeded";
  } catch (const Error &error) {
    std::string message = error.what();
    EXPECT_NE(message.find("(lld in process)"), std::string::npos) << message;
    EXPECT_NE(message.find("garbage.o"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // lld reported errors, it did not crash: it can run again.
  EXPECT_TRUE(inProcessLinkerUsable());
  EXPECT_EQ(linkSharedLibrary({object, dir / "after.so", {accessor}, "", "", {}}),
            Linker::InProcessLld);
}

TEST(InProcessLinker, ChoosingTheDriverWithoutOneNamesWhatIsMissing) {
  ScratchDir dir("onnxc-lld");
  TargetSelection target = TargetSelection::select();
  std::string accessor;
  std::string object = emitTinyObject(target, "tiny", dir, accessor);
  ScopedEnv linker("ONNXC_LINKER", "driver");
  ScopedEnv path("PATH", dir.path);
  ScopedEnv cxx("CXX", "");
  ScopedEnv onnxcCxx("ONNXC_CXX", "");
  try {
    linkSharedLibrary({object, dir / "tiny.so", {accessor}, "", "", {}});
    FAIL() << "linked with no driver on PATH";
  } catch (const Error &error) {
    std::string message = error.what();
    EXPECT_NE(message.find("no C++ compiler driver found"), std::string::npos) << message;
    EXPECT_NE(message.find("driver was asked for"), std::string::npos) << message;
  }
  EXPECT_FALSE(llvm::sys::fs::exists(dir / "tiny.so"));
}

TEST(InProcessLinker, UnknownLinkerNamesAreRefused) {
  ScopedEnv linker("ONNXC_LINKER", "gold");
  EXPECT_THROW(linkerFromEnvironment(), Error);
  ScopedEnv automatic("ONNXC_LINKER", "auto");
  EXPECT_EQ(linkerFromEnvironment(), Linker::Auto);
}
