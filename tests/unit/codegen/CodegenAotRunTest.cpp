//===- tests/unit/codegen/CodegenAotRunTest.cpp - Compiled models through the runtime ===//
//
// Runs the hand-built model through onnxc_session_run: from model.so, from
// the JIT, and from the C example linked against a generated header. The
// C API is taken from model.so with dlsym (the library carries the whole
// runtime), so this file links whether or not the test binary has it.
//
//===----------------------------------------------------------------------===//
#include "CodegenAotTestSupport.h"

#include "codegen/ModelJit.h"
#include "codegen/artifact/HeaderWriter.h"
#include "codegen/artifact/ObjectEmitter.h"
#include "codegen/artifact/SharedLibraryLinker.h"
#include "onnxc/onnxc.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <sstream>

using namespace onnxc;
using namespace onnxc::aottest;

namespace {

/// The onnxc.h functions of one loaded model.so.
struct LoadedModel {
  void *handle = nullptr;
  const onnxc_model_descriptor *descriptor = nullptr;
  decltype(&onnxc_session_create) create = nullptr;
  decltype(&onnxc_session_run) run = nullptr;
  decltype(&onnxc_session_error) error = nullptr;
  decltype(&onnxc_session_destroy) destroy = nullptr;
  decltype(&onnxc_last_error) lastError = nullptr;
};

/// Builds tiny.so + tiny.h in a scratch directory removed at the end.
class CodegenAotRun : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("/tmp/onnxc-aot-run", dir));
    dir_ = dir.str().str();
    TargetSelection target = TargetSelection::select();
    TinyModel model = buildTinyModel(target);
    emitModule(*model.module, target, EmitKind::Object, dir_ + "/tiny.o");
    linkSharedLibrary({dir_ + "/tiny.o",
                       dir_ + "/tiny.so",
                       {model.accessor, GenericDescriptorAccessor},
                       "",
                       "",
                       {}});
    writeModelHeader(model.plan, dir_ + "/tiny.h");

    loaded_.handle = dlopen((dir_ + "/tiny.so").c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(loaded_.handle, nullptr) << dlerror();
    auto symbol = [&](const char *name) { return dlsym(loaded_.handle, name); };
    loaded_.descriptor =
        reinterpret_cast<const onnxc_model_descriptor *(*)()>(symbol("onnxc_model_tiny"))();
    loaded_.create = reinterpret_cast<decltype(loaded_.create)>(symbol("onnxc_session_create"));
    loaded_.run = reinterpret_cast<decltype(loaded_.run)>(symbol("onnxc_session_run"));
    loaded_.error = reinterpret_cast<decltype(loaded_.error)>(symbol("onnxc_session_error"));
    loaded_.destroy = reinterpret_cast<decltype(loaded_.destroy)>(symbol("onnxc_session_destroy"));
    loaded_.lastError = reinterpret_cast<decltype(loaded_.lastError)>(symbol("onnxc_last_error"));
    if (!loaded_.create || !loaded_.run || !loaded_.error || !loaded_.destroy)
      FAIL() << "the model .so does not export the runtime C API (onnxc_session_*)";
  }

  void TearDown() override {
    if (loaded_.handle)
      dlclose(loaded_.handle);
    if (!dir_.empty())
      llvm::sys::fs::remove_directories(dir_);
  }

  /// Runs `model` with the .so's runtime for one batch size; returns y.
  std::vector<float> run(const onnxc_model_descriptor *model, int64_t batch) {
    onnxc_session *session = loaded_.create(model, 2);
    EXPECT_NE(session, nullptr) << loaded_.lastError();
    if (!session)
      return {};
    std::vector<float> x = sampleInput(batch);
    onnxc_tensor input{};
    input.data = x.data();
    input.dtype = ONNXC_F32;
    input.rank = 2;
    input.dims[0] = batch;
    input.dims[1] = 4;
    input.size_bytes = x.size() * sizeof(float);
    onnxc_tensor output{}; // data NULL: the session owns the result
    std::vector<float> y;
    if (loaded_.run(session, &input, 1, &output, 1) != 0) {
      ADD_FAILURE() << loaded_.error(session);
    } else {
      EXPECT_EQ(output.dtype, ONNXC_F32);
      EXPECT_EQ(output.rank, 2);
      EXPECT_EQ(output.dims[0], batch);
      EXPECT_EQ(output.dims[1], 4);
      const float *data = static_cast<const float *>(output.data);
      y.assign(data, data + batch * 4);
    }
    loaded_.destroy(session);
    return y;
  }

  std::string dir_;
  LoadedModel loaded_;
};

std::string commandOutput(const std::string &command, int &status) {
  std::string output;
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) {
    status = -1;
    return output;
  }
  char chunk[256];
  while (size_t n = fread(chunk, 1, sizeof(chunk), pipe))
    output.append(chunk, n);
  status = pclose(pipe);
  return output;
}

} // namespace

TEST_F(CodegenAotRun, SharedLibraryRunsForTwoBatchSizes) {
  for (int64_t batch : {1, 5}) {
    std::vector<float> x = sampleInput(batch);
    EXPECT_EQ(run(loaded_.descriptor, batch), expectedOutput(x)) << "batch " << batch;
  }
}

TEST_F(CodegenAotRun, JitDescriptorRunsThroughTheSameRuntime) {
  TargetSelection target = TargetSelection::select();
  TinyModel model = buildTinyModel(target, "tiny_jit");
  std::unique_ptr<JitModel> jit =
      compileModelJit(std::move(model.module), std::move(model.context), target, model.accessor);
  for (int64_t batch : {2, 9}) {
    std::vector<float> x = sampleInput(batch);
    EXPECT_EQ(run(jit->descriptor(), batch), expectedOutput(x)) << "batch " << batch;
  }
}

TEST_F(CodegenAotRun, CExampleBuildsAgainstTheGeneratedHeaderAndRuns) {
  std::string source = std::string(ONNXC_SOURCE_DIR) + "/examples/c/run_model.c";
  std::string program = dir_ + "/run_model";
  // In a sanitized build tiny.so links the sanitizer runtimes, which must
  // come first in the program: it is built with the same flags.
  std::string build = "cc -std=c11 -Wall -Wextra -Werror " + defaultRuntimeLinkFlags() + " -I" +
                      std::string(ONNXC_SOURCE_DIR) + "/runtime/include -I" + dir_ +
                      " -DONNXC_MODEL_HEADER='\"tiny.h\"' " + source + " " + dir_ +
                      "/tiny.so -Wl,-rpath," + dir_ + " -o " + program;
  int status = 0;
  std::string buildLog = commandOutput(build, status);
  ASSERT_EQ(status, 0) << build << "\n" << buildLog;

  std::string output = commandOutput(program + " batch=2", status);
  EXPECT_EQ(status, 0) << output;
  // x = i % 10 / 4 - 1 for i = 0..7, y = x + 2 * {0.5, 1, 1.5, 2}.
  EXPECT_EQ(output, "y: f32 [2, 4] = 0 1.25 2.5 3.75 1 2.25 3.5 4.75\n");

  output = commandOutput(program + " seq=3", status);
  EXPECT_NE(status, 0);
  EXPECT_EQ(output, "error: 'seq=3' is not symbol=value for a symbol of model 'tiny'\n");
}
