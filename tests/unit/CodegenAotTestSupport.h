//===- tests/unit/CodegenAotTestSupport.h - A hand-built model for AOT tests ===//
//
// The compile-to-artifact tests need a model before lowering exists, so this
// builds one by hand: over x: f32[batch, 4] and a constant c = {0.5, 1, 1.5, 2},
//   step 0:  t = x + c   (t an arena intermediate)
//   step 1:  y = t + c   (the same kernel function, other buffers)
// Each task is one row; the task count is `batch`. It also runs a
// descriptor by hand (what the runtime does, minus threads), so descriptor
// contents can be checked before the runtime exists.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "../../runtime/DimExpr.h"
#include "codegen/ModelPlan.h"
#include "codegen/TargetSelection.h"
#include "codegen/artifact/DescriptorEmitter.h"
#include "onnxc/model_abi.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace onnxc::aottest {

/// A fresh directory under /tmp (named from `prefix`) for one test's
/// artifacts, removed afterwards.
struct ScratchDir {
  explicit ScratchDir(const char *prefix = "onnxc-aot") {
    llvm::SmallString<128> dir;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory(std::string("/tmp/") + prefix, dir));
    path = dir.str().str();
  }
  ~ScratchDir() { llvm::sys::fs::remove_directories(path); }
  std::string operator/(const std::string &name) const { return path + "/" + name; }
  std::string path;
};

inline constexpr float RowConstant[4] = {0.5f, 1.0f, 1.5f, 2.0f};

/// y = x + 2c, what the tiny model computes.
inline std::vector<float> expectedOutput(const std::vector<float> &x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = x[i] + RowConstant[i % 4] + RowConstant[i % 4];
  return y;
}

inline std::vector<float> sampleInput(int64_t batch) {
  std::vector<float> x(size_t(batch) * 4);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i % 10) * 0.25f - 1.0f;
  return x;
}

/// out[row, j] = in[row, j] + c[j] for rows [begin, end); buffers = {in, out, c}.
inline llvm::Function *emitAddRowKernel(llvm::Module &module) {
  llvm::LLVMContext &context = module.getContext();
  auto *kernel = llvm::Function::Create(kernelFunctionType(context),
                                        llvm::GlobalValue::ExternalLinkage, "add_row", module);
  llvm::Argument *buffers = kernel->getArg(0);
  llvm::Argument *begin = kernel->getArg(2);
  llvm::Argument *end = kernel->getArg(3);
  auto *entry = llvm::BasicBlock::Create(context, "entry", kernel);
  auto *loop = llvm::BasicBlock::Create(context, "row", kernel);
  auto *exit = llvm::BasicBlock::Create(context, "exit", kernel);
  llvm::IRBuilder<> b(entry);
  llvm::Type *ptr = b.getPtrTy(), *f32 = b.getFloatTy(), *i64 = b.getInt64Ty();
  auto bufferAt = [&](int index) {
    return b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, buffers, index));
  };
  llvm::Value *in = bufferAt(0), *out = bufferAt(1), *c = bufferAt(2);
  b.CreateCondBr(b.CreateICmpSLT(begin, end), loop, exit);

  b.SetInsertPoint(loop);
  llvm::PHINode *row = b.CreatePHI(i64, 2, "row");
  row->addIncoming(begin, entry);
  for (int j = 0; j < 4; ++j) {
    llvm::Value *index = b.CreateAdd(b.CreateMul(row, b.getInt64(4)), b.getInt64(j));
    llvm::Value *sum = b.CreateFAdd(b.CreateLoad(f32, b.CreateGEP(f32, in, index)),
                                    b.CreateLoad(f32, b.CreateConstGEP1_64(f32, c, j)));
    b.CreateStore(sum, b.CreateGEP(f32, out, index));
  }
  llvm::Value *next = b.CreateAdd(row, b.getInt64(1));
  row->addIncoming(next, loop);
  b.CreateCondBr(b.CreateICmpSLT(next, end), loop, exit);

  b.SetInsertPoint(exit);
  b.CreateRet(b.getInt32(0));
  return kernel;
}

/// One task per row: the task count is symbols[0] (batch).
inline llvm::Function *emitRowCount(llvm::Module &module) {
  llvm::LLVMContext &context = module.getContext();
  auto *count = llvm::Function::Create(taskCountFunctionType(context),
                                       llvm::GlobalValue::ExternalLinkage, "row_count", module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", count));
  b.CreateRet(b.CreateLoad(b.getInt64Ty(), count->getArg(0)));
  return count;
}

struct TinyModel {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  ModelPlan plan;
  std::string accessor;
};

/// The plan and module of the tiny model for `target`, descriptor emitted
/// after `extend` (if any) has added to the plan.
inline TinyModel buildTinyModel(const TargetSelection &target, const std::string &name = "tiny",
                                const std::function<void(ModelPlan &)> &extend = {},
                                ConstantPlacement placement = ConstantPlacement::InModule) {
  TinyModel model;
  model.context = std::make_unique<llvm::LLVMContext>();
  model.module = std::make_unique<llvm::Module>(name, *model.context);
  target.configureModule(*model.module);
  llvm::Function *kernel = emitAddRowKernel(*model.module);
  llvm::Function *count = emitRowCount(*model.module);

  ModelPlan &plan = model.plan;
  plan.name = name;
  Dim batch = Dim::symbol("batch");
  plan.symbols = {{"batch", 0, 0}};
  plan.inputs = {{"x", DType::F32, Shape({batch, Dim(4)})}};
  plan.outputs = {{"y", DType::F32, Shape({batch, Dim(4)})}};
  auto bytes = std::make_shared<std::vector<uint8_t>>(sizeof(RowConstant));
  std::memcpy(bytes->data(), RowConstant, sizeof(RowConstant));
  PlanBuffer input{BufferKind::Input, 0, batch * Dim(16), {}, 0, 0};
  PlanBuffer output{BufferKind::Output, 0, batch * Dim(16), {}, 0, 0};
  PlanBuffer constant{BufferKind::Constant, 0, Dim(16), ConstantBytes(bytes), 0, 0};
  PlanBuffer temporary{BufferKind::Intermediate, 0, batch * Dim(16), {}, 0, 1};
  plan.buffers = {input, output, constant, temporary};
  plan.steps = {{"t = x + c", kernel, count, {0, 3, 2}, {}},
                {"y = t + c", kernel, count, {3, 1, 2}, {}}};
  if (extend)
    extend(plan);
  model.accessor = emitDescriptor(*model.module, plan, placement);
  return model;
}

/// Runs a descriptor the way the runtime does, on one thread: binds the
/// symbols from the input shapes, allocates intermediates, calls each step
/// over all its tasks. Returns the single f32 output.
inline std::vector<float> runByHand(const onnxc_model_descriptor &model,
                                    const std::vector<float> &x, int64_t batch) {
  std::vector<int64_t> symbols(model.num_symbols);
  for (int32_t s = 0; s < model.num_symbols; ++s) {
    EXPECT_EQ(model.symbol_sources[s].input, 0);
    EXPECT_EQ(model.symbol_sources[s].axis, 0);
    symbols[s] = batch;
  }
  std::vector<float> y(x.size());
  std::vector<std::vector<uint8_t>> arena(model.num_buffers);
  std::vector<void *> pointers(model.num_buffers);
  for (int32_t i = 0; i < model.num_buffers; ++i) {
    const onnxc_buffer &buffer = model.buffers[i];
    std::optional<int64_t> size =
        runtime::evaluateDimExpr(buffer.size_bytes, symbols.data(), model.num_symbols);
    EXPECT_TRUE(size.has_value());
    switch (buffer.kind) {
    case ONNXC_BUFFER_INPUT:
      EXPECT_EQ(size_t(*size), x.size() * sizeof(float));
      pointers[i] = const_cast<float *>(x.data());
      break;
    case ONNXC_BUFFER_OUTPUT:
      EXPECT_EQ(size_t(*size), y.size() * sizeof(float));
      pointers[i] = y.data();
      break;
    case ONNXC_BUFFER_CONSTANT:
      pointers[i] = const_cast<void *>(buffer.constant_data);
      break;
    default:
      arena[i].resize(size_t(*size));
      pointers[i] = arena[i].data();
    }
  }
  for (int32_t s = 0; s < model.num_steps; ++s) {
    const onnxc_step &step = model.steps[s];
    std::vector<void *> stepBuffers;
    for (int32_t k = 0; k < step.num_buffers; ++k)
      stepBuffers.push_back(pointers[step.buffers[k]]);
    int64_t tasks = step.task_count ? step.task_count(symbols.data()) : 1;
    // Two halves, as two threads would split it, to exercise task ranges.
    step.kernel(stepBuffers.data(), symbols.data(), 0, tasks / 2);
    step.kernel(stepBuffers.data(), symbols.data(), tasks / 2, tasks);
  }
  return y;
}

/// Checks the descriptor fields of the tiny model.
inline void expectTinyDescriptor(const onnxc_model_descriptor &model, const char *name) {
  EXPECT_EQ(model.abi_version, uint32_t(ONNXC_ABI_VERSION));
  EXPECT_STREQ(model.model_name, name);
  ASSERT_EQ(model.num_symbols, 1);
  EXPECT_STREQ(model.symbol_names[0], "batch");
  ASSERT_EQ(model.num_inputs, 1);
  ASSERT_EQ(model.num_outputs, 1);
  EXPECT_STREQ(model.inputs[0].name, "x");
  EXPECT_EQ(model.inputs[0].dtype, ONNXC_F32);
  ASSERT_EQ(model.inputs[0].rank, 2);
  EXPECT_STREQ(model.inputs[0].shape_text, "[batch, 4]");
  const int64_t batchWords[] = {1, 1, 1, 0};
  EXPECT_EQ(std::memcmp(model.inputs[0].dims[0], batchWords, sizeof(batchWords)), 0);
  const int64_t fourWords[] = {1, 4, 0};
  EXPECT_EQ(std::memcmp(model.inputs[0].dims[1], fourWords, sizeof(fourWords)), 0);
  EXPECT_STREQ(model.outputs[0].name, "y");
  ASSERT_EQ(model.num_buffers, 4);
  EXPECT_EQ(model.buffers[0].kind, ONNXC_BUFFER_INPUT);
  EXPECT_EQ(model.buffers[1].kind, ONNXC_BUFFER_OUTPUT);
  EXPECT_EQ(model.buffers[2].kind, ONNXC_BUFFER_CONSTANT);
  EXPECT_EQ(model.buffers[3].kind, ONNXC_BUFFER_INTERMEDIATE);
  EXPECT_EQ(model.buffers[3].first_step, 0);
  EXPECT_EQ(model.buffers[3].last_step, 1);
  ASSERT_NE(model.buffers[2].constant_data, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(model.buffers[2].constant_data) % 64, 0u);
  EXPECT_EQ(std::memcmp(model.buffers[2].constant_data, RowConstant, sizeof(RowConstant)), 0);
  ASSERT_EQ(model.num_steps, 2);
  EXPECT_STREQ(model.steps[1].name, "y = t + c");
  EXPECT_EQ(model.steps[0].kernel, model.steps[1].kernel);
  ASSERT_EQ(model.steps[1].num_buffers, 3);
  EXPECT_EQ(model.steps[1].buffers[0], 3);
  EXPECT_EQ(model.steps[1].buffers[1], 1);
}

} // namespace onnxc::aottest
