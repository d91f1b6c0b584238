//===- tests/unit/runtime/RuntimeBranchTest.cpp - Branch steps: loops in the step list ===//
//
// A hand-built descriptor with a loop, as codegen emits one for Loop/Scan:
//
//   x[n] f32 -> y[] f32 = 2 * sum(x)
//   step 0 init:     i = 0, y = 0
//   step 1 enter:    branch to 4 when n == 0
//   step 2 add:      y += x[i]
//   step 3 next:     i += 1; branch to 2 while i < n
//   step 4 double:   y *= 2
//
//===----------------------------------------------------------------------===//
#include "onnxc/onnxc.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

const int64_t kNExpr[] = {1, 1, 1, 0};
const int64_t kNF32Bytes[] = {1, 4, 1, 0};
const int64_t kF32Bytes[] = {1, 4, 0};
const int64_t kI64Bytes[] = {1, 8, 0};

int32_t initKernel(void *const *buffers, const int64_t *, int64_t, int64_t) {
  *static_cast<int64_t *>(buffers[0]) = 0;
  *static_cast<float *>(buffers[1]) = 0;
  return 0;
}

int32_t enterKernel(void *const *, const int64_t *symbols, int64_t, int64_t) {
  return symbols[0] == 0 ? ONNXC_BRANCH_TAKEN : 0;
}

int32_t addKernel(void *const *buffers, const int64_t *, int64_t, int64_t) {
  int64_t i = *static_cast<const int64_t *>(buffers[0]);
  *static_cast<float *>(buffers[2]) += static_cast<const float *>(buffers[1])[i];
  return 0;
}

int32_t nextKernel(void *const *buffers, const int64_t *symbols, int64_t, int64_t) {
  int64_t &i = *static_cast<int64_t *>(buffers[0]);
  return ++i < symbols[0] ? ONNXC_BRANCH_TAKEN : 0;
}

int32_t doubleKernel(void *const *buffers, const int64_t *, int64_t, int64_t) {
  *static_cast<float *>(buffers[0]) *= 2;
  return 0;
}

/// A branch kernel that reports bad data (neither 0 nor taken).
int32_t failingKernel(void *const *, const int64_t *, int64_t, int64_t) { return 1; }

struct LoopModel {
  enum Buffer { X, Y, I };

  LoopModel() {
    inputDims = {kNExpr};
    inputs = {{"x", ONNXC_F32, 1, nullptr, "[n]"}};
    outputs = {{"y", ONNXC_F32, 0, nullptr, "[]"}};
    buffers = {{ONNXC_BUFFER_INPUT, 0, kNF32Bytes, nullptr, 0, 0},
               {ONNXC_BUFFER_OUTPUT, 0, kF32Bytes, nullptr, 0, 0},
               {ONNXC_BUFFER_INTERMEDIATE, 0, kI64Bytes, nullptr, 0, 3}};
    stepBuffers = {{I, Y}, {}, {I, X, Y}, {I}, {Y}};
    steps = {{"init", initKernel, nullptr, 0, nullptr, nullptr, ONNXC_STEP_KERNEL, 0},
             {"enter", enterKernel, nullptr, 0, nullptr, nullptr, ONNXC_STEP_BRANCH, 4},
             {"add", addKernel, nullptr, 0, nullptr, nullptr, ONNXC_STEP_KERNEL, 0},
             {"next", nextKernel, nullptr, 0, nullptr, nullptr, ONNXC_STEP_BRANCH, 2},
             {"double", doubleKernel, nullptr, 0, nullptr, nullptr, ONNXC_STEP_KERNEL, 0}};
  }

  const onnxc_model_descriptor *descriptor() {
    inputs[0].dims = inputDims.data();
    for (size_t s = 0; s < steps.size(); ++s) {
      steps[s].num_buffers = int32_t(stepBuffers[s].size());
      steps[s].buffers = stepBuffers[s].data();
    }
    model = {}; // unset fields stay 0 or null: no assumptions, cache pairs, precision or version
    model.abi_version = ONNXC_ABI_VERSION;
    model.model_name = "loop";
    model.num_symbols = 1;
    model.symbol_names = symbolNames;
    model.symbol_sources = symbolSources;
    model.num_inputs = 1;
    model.inputs = inputs.data();
    model.num_outputs = 1;
    model.outputs = outputs.data();
    model.num_buffers = int32_t(buffers.size());
    model.buffers = buffers.data();
    model.num_steps = int32_t(steps.size());
    model.steps = steps.data();
    return &model;
  }

  const char *symbolNames[1] = {"n"};
  onnxc_symbol_source symbolSources[1] = {{0, 0}};
  std::vector<onnxc_dim_expr> inputDims;
  std::vector<onnxc_tensor_info> inputs, outputs;
  std::vector<onnxc_buffer> buffers;
  std::vector<onnxc_step> steps;
  std::vector<std::vector<int32_t>> stepBuffers;
  onnxc_model_descriptor model{};
};

struct SessionDeleter {
  void operator()(onnxc_session *session) const { onnxc_session_destroy(session); }
};
using SessionPtr = std::unique_ptr<onnxc_session, SessionDeleter>;

std::string createError(LoopModel &model) {
  SessionPtr session(onnxc_session_create(model.descriptor(), 1));
  return session ? "" : onnxc_last_error();
}

} // namespace

TEST(RuntimeBranch, ALoopRunsItsBodyOncePerIteration) {
  LoopModel model;
  SessionPtr session(onnxc_session_create(model.descriptor(), 2));
  ASSERT_TRUE(session) << onnxc_last_error();
  for (int64_t n : {0, 1, 6, 3}) {
    std::vector<float> x;
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      x.push_back(float(i) + 0.5f);
      sum += x.back();
    }
    onnxc_tensor input{x.data(), ONNXC_F32, 1, {n}, 0};
    float y = -1;
    onnxc_tensor output{&y, ONNXC_F32, 0, {}, sizeof(float)};
    ASSERT_EQ(onnxc_session_run(session.get(), &input, 1, &output, 1), 0)
        << onnxc_session_error(session.get());
    EXPECT_EQ(y, 2 * sum) << "n = " << n;
  }
}

TEST(RuntimeBranch, ABranchKernelsErrorFailsTheRun) {
  LoopModel model;
  model.steps[3].kernel = failingKernel;
  model.steps[3].failure = "the loop went wrong";
  SessionPtr session(onnxc_session_create(model.descriptor(), 1));
  ASSERT_TRUE(session) << onnxc_last_error();
  float x[2] = {1, 2}, y = 0;
  onnxc_tensor input{x, ONNXC_F32, 1, {2}, 0};
  onnxc_tensor output{&y, ONNXC_F32, 0, {}, sizeof(float)};
  EXPECT_NE(onnxc_session_run(session.get(), &input, 1, &output, 1), 0);
  EXPECT_EQ(std::string(onnxc_session_error(session.get())), "step 'next': the loop went wrong");
}

TEST(RuntimeBranch, TheDescriptorCheckRefusesBadBranches) {
  LoopModel model;
  model.steps[3].branch_target = 6;
  EXPECT_EQ(createError(model),
            "model 'loop': step 3 ('next') branches to step 6, but the model has 5 steps");
  model = LoopModel();
  model.steps[1].branch_target = -1;
  EXPECT_EQ(createError(model),
            "model 'loop': step 1 ('enter') branches to step -1, but the model has 5 steps");
  model = LoopModel();
  model.steps[1].kind = 7;
  EXPECT_EQ(createError(model), "model 'loop': step 1 ('enter') has an invalid kind 7");
  model = LoopModel();
  model.steps[3].task_count = [](const int64_t *) -> int64_t { return 2; };
  EXPECT_EQ(createError(model), "model 'loop': step 3 ('next') is a branch with a task count; "
                                "a branch runs as one task");
  model = LoopModel();
  model.steps[1].branch_target = 5; // past the last step: ends the run
  EXPECT_EQ(createError(model), "");
}
