//===- tests/unit/codegen/CodegenAotSharedLibraryTest.cpp - model.o -> model.so ---===//
#include "CodegenAotTestSupport.h"

#include "codegen/artifact/ObjectEmitter.h"
#include "codegen/artifact/SharedLibraryLinker.h"
#include "ir/Error.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using namespace onnxc;
using namespace onnxc::aottest;

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Emits and links `model` into dir/<name>.so; returns the library path.
std::string compileToLibrary(TinyModel &model, const TargetSelection &target,
                             const ScratchDir &dir) {
  std::string object = dir / (model.plan.name + ".o");
  std::string library = dir / (model.plan.name + ".so");
  emitModule(*model.module, target, EmitKind::Object, object);
  linkSharedLibrary({object, library, {model.accessor, GenericDescriptorAccessor}, "", "", {}});
  return library;
}

using Accessor = const onnxc_model_descriptor *(*)();

} // namespace

TEST(CodegenAotSharedLibrary, DlopenedLibraryHasTheDescriptorAndComputes) {
  ScratchDir dir;
  TargetSelection target = TargetSelection::select();
  TinyModel model = buildTinyModel(target);
  std::string library = compileToLibrary(model, target, dir);

  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto named = reinterpret_cast<Accessor>(dlsym(handle, "onnxc_model_tiny"));
  auto generic = reinterpret_cast<Accessor>(dlsym(handle, GenericDescriptorAccessor));
  ASSERT_NE(named, nullptr);
  ASSERT_NE(generic, nullptr);
  EXPECT_EQ(named(), generic());
  expectTinyDescriptor(*named(), "tiny");
  // Kernels are internal: reachable through the descriptor only.
  EXPECT_EQ(dlsym(handle, "add_row"), nullptr);
  for (int64_t batch : {1, 2, 7}) {
    std::vector<float> x = sampleInput(batch);
    EXPECT_EQ(runByHand(*named(), x, batch), expectedOutput(x)) << "batch " << batch;
  }
  dlclose(handle);
}

TEST(CodegenAotSharedLibrary, GenericX86_64LibraryComputes) {
  ScratchDir dir;
  TargetSelection target = TargetSelection::genericX86_64();
  TinyModel model = buildTinyModel(target, "generic");
  std::string library = compileToLibrary(model, target, dir);
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto accessor = reinterpret_cast<Accessor>(dlsym(handle, "onnxc_model_generic"));
  ASSERT_NE(accessor, nullptr);
  std::vector<float> x = sampleInput(4);
  EXPECT_EQ(runByHand(*accessor(), x, 4), expectedOutput(x));
  dlclose(handle);
}

TEST(CodegenAotSharedLibrary, ExportsOnlyTheAccessorsAndTheApi) {
  ScratchDir dir;
  TargetSelection target = TargetSelection::genericX86_64();
  TinyModel model = buildTinyModel(target);
  std::string library = compileToLibrary(model, target, dir);
  std::string listing = dir / "symbols.txt";
  std::string command = "nm -D --defined-only " + library + " > " + listing;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::istringstream lines(readFile(listing));
  std::string address, kind, name;
  std::set<std::string> exported;
  while (lines >> address >> kind >> name) {
    exported.insert(name);
    // onnxc.h, model_info.h and onnxc_generate.h: a C program links model.so alone.
    bool expected = name == "onnxc_model_tiny" || name == GenericDescriptorAccessor ||
                    name.rfind("onnxc_session_", 0) == 0 || name == "onnxc_last_error" ||
                    name.rfind("onnxc_model_check", 0) == 0 || name.rfind("onnxc_dim_", 0) == 0 ||
                    name == "onnxc_cpu_features_checked" || name.rfind("onnxc_generat", 0) == 0;
    EXPECT_EQ(name.find("onnxc::"), std::string::npos) << name;
    EXPECT_TRUE(expected) << "unexpected export " << name;
  }
  for (const char *api : {"onnxc_session_create", "onnxc_generator_create", "onnxc_generate",
                          "onnxc_model_check", "onnxc_model_check_cpu", "onnxc_dim_format"})
    EXPECT_TRUE(exported.count(api)) << api << " is not exported";
}

TEST(CodegenAotSharedLibrary, LinkErrorsNameTheCommandAndFirstError) {
  ScratchDir dir;
  std::string bogusObject = dir / "bogus.o";
  std::ofstream(bogusObject) << "not an object file\n";
  try {
    linkSharedLibrary({bogusObject, dir / "bogus.so", {}, "", "", {}});
    FAIL() << "linking garbage succeeded";
  } catch (const Error &error) {
    std::string message = error.what();
    EXPECT_NE(message.find("linking '" + dir / "bogus.so" + "' failed"), std::string::npos);
    EXPECT_NE(message.find("[command: "), std::string::npos) << message;
    EXPECT_NE(message.find("-shared"), std::string::npos) << message;
  }
  EXPECT_THROW(linkSharedLibrary({bogusObject, dir / "x.so", {}, "", "no-such-compiler-xyz", {}}),
               Error);
}

TEST(CodegenAotEmit, AssemblyAndLlvmIrForInspection) {
  ScratchDir dir;
  TargetSelection target = TargetSelection::select({"x86-64-v3", ""});
  TinyModel asmModel = buildTinyModel(target);
  emitModule(*asmModel.module, target, EmitKind::Assembly, dir / "tiny.s");
  std::string assembly = readFile(dir / "tiny.s");
  EXPECT_NE(assembly.find("onnxc_model_tiny:"), std::string::npos);
  EXPECT_NE(assembly.find(".p2align\t6"), std::string::npos) << "constant not 64-byte aligned";
  EXPECT_NE(assembly.find("vaddps"), std::string::npos) << "row loop not vectorized for AVX";

  TinyModel irModel = buildTinyModel(target);
  emitModule(*irModel.module, target, EmitKind::LlvmIr, dir / "tiny.ll");
  std::string ir = readFile(dir / "tiny.ll");
  // O3 adds attributes (noundef nonnull ...) between define and the name.
  EXPECT_TRUE(std::regex_search(ir, std::regex("define internal [^\\n]*i32 @add_row\\("))) << ir;
  EXPECT_TRUE(std::regex_search(ir, std::regex("define [^\\n]*ptr @onnxc_model_tiny\\(\\)"))) << ir;
  EXPECT_EQ(parseEmitKind("asm"), EmitKind::Assembly);
  EXPECT_THROW(parseEmitKind("so"), Error);
  EXPECT_THROW(emitModule(*irModel.module, target, EmitKind::Object, dir / "no/such/dir.o"), Error);
}

// The load-time budget of the issue is 50 ms for a MiniLM-sized model (~90 MB
// of fp32 weights). Loading must be mmap + relocations of the descriptor
// only; this measures it with ONNXC_AOT_LOAD_MB megabytes of constants
// (default 16, to keep the test quick; 90 reproduces the MiniLM size).
TEST(CodegenAotSharedLibrary, LoadTimeWithLargeConstants) {
  const char *sizeText = std::getenv("ONNXC_AOT_LOAD_MB");
  size_t megabytes = sizeText ? size_t(std::atoi(sizeText)) : 16;
  ScratchDir dir;
  TargetSelection target = TargetSelection::select();
  constexpr size_t chunk = size_t(4) << 20;
  std::vector<uint8_t> pattern(chunk);
  for (size_t i = 0; i < chunk; ++i)
    pattern[i] = uint8_t(uint32_t(i) * 2654435761u >> 24);
  // Weight buffers the steps never touch: the loader still has to map them.
  TinyModel model = buildTinyModel(target, "weights", [&](ModelPlan &plan) {
    for (size_t i = 0; i < megabytes / 4; ++i) {
      auto weights = std::make_shared<std::vector<uint8_t>>(pattern);
      (*weights)[0] = uint8_t(i); // distinct, so LLVM cannot merge the constants
      plan.buffers.push_back(
          {BufferKind::Constant, 0, Dim(int64_t(chunk)), ConstantBytes(weights), 0, 0});
    }
  });

  auto compileStart = std::chrono::steady_clock::now();
  std::string library = compileToLibrary(model, target, dir);
  double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compileStart).count();

  auto loadStart = std::chrono::steady_clock::now();
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto accessor = reinterpret_cast<Accessor>(dlsym(handle, "onnxc_model_weights"));
  ASSERT_NE(accessor, nullptr);
  const onnxc_model_descriptor *descriptor = accessor();
  double loadMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - loadStart)
          .count();
  std::printf("[ measure  ] %zu MB of constants: emit+link %.2f s, dlopen+descriptor %.2f ms\n",
              megabytes / 4 * 4, compileSeconds, loadMs);
  ASSERT_EQ(descriptor->num_buffers, int32_t(4 + megabytes / 4));
  if (megabytes >= 4) {
    auto *bytes = static_cast<const uint8_t *>(descriptor->buffers[4].constant_data);
    EXPECT_EQ(std::memcmp(bytes + 1, pattern.data() + 1, chunk - 1), 0);
  }
  EXPECT_LT(loadMs, 50.0);
  dlclose(handle);
}
