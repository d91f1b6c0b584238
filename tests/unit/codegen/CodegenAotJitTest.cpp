//===- tests/unit/codegen/CodegenAotJitTest.cpp - Descriptor emission through ORC -===//
#include "CodegenAotTestSupport.h"

#include "codegen/ModelCompiler.h"
#include "codegen/ModelJit.h"
#include "codegen/artifact/HeaderWriter.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::aottest;

namespace {

template <typename Body> std::string errorOf(Body body) {
  try {
    body();
  } catch (const Error &error) {
    return error.what();
  }
  return "(no error)";
}

} // namespace

TEST(CodegenAotTarget, NativeIsTheHostCpuWithItsFeatures) {
  TargetSelection native = TargetSelection::select();
  EXPECT_FALSE(native.cpu().empty());
  EXPECT_NE(native.cpu(), "native");
  EXPECT_NE(native.features().find("avx2"), std::string::npos) << native.features();
  TargetSelection generic = TargetSelection::genericX86_64();
  EXPECT_EQ(generic.cpu(), "x86-64");
  EXPECT_EQ(generic.features(), "");
}

TEST(CodegenAotTarget, FeaturesAreWhatTheCpuImpliesWithTheOverridesApplied) {
  // A named CPU's features come from its name (its feature string is empty).
  TargetSelection v3 = TargetSelection::select({"x86-64-v3", ""});
  EXPECT_TRUE(v3.hasFeature("avx2"));
  EXPECT_TRUE(v3.hasFeature("fma"));
  EXPECT_FALSE(v3.hasFeature("avx512f"));
  EXPECT_TRUE(TargetSelection::select({"znver4", ""}).hasFeature("avx512f"));
  // An override wins, and turns off what depends on it.
  TargetSelection noAvx512 = TargetSelection::select({"znver4", "-avx512f"});
  EXPECT_FALSE(noAvx512.hasFeature("avx512f"));
  EXPECT_FALSE(noAvx512.hasFeature("avx512bw"));
  EXPECT_TRUE(noAvx512.hasFeature("avx2"));
  TargetSelection generic = TargetSelection::select({"x86-64", "+avx2,-fma"});
  EXPECT_TRUE(generic.hasFeature("avx2"));
  EXPECT_FALSE(generic.hasFeature("fma"));
  EXPECT_FALSE(TargetSelection::select({"native", "-avx2"}).hasFeature("avx2"));
}

TEST(CodegenAotTarget, UserAttributesComeLastAndAreValidated) {
  TargetSelection selection = TargetSelection::select({"x86-64", " +avx2, -fma"});
  EXPECT_EQ(selection.features(), "+avx2,-fma");
  EXPECT_EQ(errorOf([] {
              TargetSelection::select({"x86-64", "avx2"});
            }),
            "--mattr item 'avx2' must start with '+' or '-' (e.g. +avx2,-fma)");
  std::string unknownFeature = errorOf([] { TargetSelection::select({"native", "+avx3"}); });
  EXPECT_NE(unknownFeature.find("unknown --mattr feature 'avx3'"), std::string::npos);
}

TEST(CodegenAotTarget, UnknownCpuSaysHowToListValidOnes) {
  std::string message = errorOf([] { TargetSelection::select({"skylak", ""}); });
  EXPECT_NE(message.find("unknown --mcpu 'skylak'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'skylake'?"), std::string::npos) << message;
  EXPECT_NE(message.find("--mcpu=help"), std::string::npos) << message;
  std::vector<std::string> cpus = TargetSelection::availableCpus();
  EXPECT_NE(std::find(cpus.begin(), cpus.end(), "x86-64-v3"), cpus.end());
}

TEST(CodegenAotDescriptor, LlvmLayoutMatchesModelAbiHeader) {
  for (const TargetSelection &target :
       {TargetSelection::select(), TargetSelection::genericX86_64()}) {
    llvm::LLVMContext context;
    llvm::Module module("layout", context);
    target.configureModule(module);
    EXPECT_NO_THROW(checkDescriptorLayout(module));
  }
}

TEST(CodegenAotDescriptor, AccessorNamesAreSanitized) {
  EXPECT_EQ(descriptorAccessorName("bert-base.v2"), "onnxc_model_bert_base_v2");
  EXPECT_EQ(descriptorAccessorName("MiniLM_L6"), "onnxc_model_MiniLM_L6");
  EXPECT_EQ(descriptorAccessorName(""), "onnxc_model_model");
}

TEST(CodegenAotDescriptor, ArtifactNamesComeFromTheOutputFile) {
  EXPECT_EQ(modelNameForOutput("model.so"), "model");
  EXPECT_EQ(modelNameForOutput("out/my-gpt.so"), "my_gpt");
  EXPECT_EQ(modelNameForOutput("/tmp/bert.base.o"), "bert_base");
  EXPECT_EQ(modelNameForOutput("2layer.so"), "_2layer");
  EXPECT_EQ(modelNameForOutput("---.so"), "model");
  for (const char *path : {"model.so", "out/my-gpt.so", "2layer.so", "---.so", "a b.ll"})
    EXPECT_TRUE(isValidModelName(modelNameForOutput(path))) << path;
  EXPECT_TRUE(isValidModelName("minilm"));
  EXPECT_TRUE(isValidModelName("_gpt2_L6"));
  for (const char *bad : {"", "my-gpt", "2layer", "a.b", "caf\xc3\xa9", "x y"})
    EXPECT_FALSE(isValidModelName(bad)) << bad;
  EXPECT_FALSE(isValidModelName(std::string(201, 'a')));
}

TEST(CodegenAotHeader, GuardDoesNotCollideWithTheAbiHeader) {
  TinyModel model = buildTinyModel(TargetSelection::genericX86_64(), "abi");
  std::string header = renderModelHeader(model.plan, "abi.h");
  EXPECT_EQ(header.find("ONNXC_MODEL_ABI_H\n"), std::string::npos) << header;
  EXPECT_NE(header.find("#ifndef ONNXC_MODEL_ABI_GENERATED_H\n"), std::string::npos) << header;
}

TEST(CodegenAotDescriptor, JitReadsBackEveryField) {
  TargetSelection target = TargetSelection::select();
  TinyModel model = buildTinyModel(target, "tiny-jit");
  EXPECT_EQ(model.accessor, "onnxc_model_tiny_jit");
  std::unique_ptr<JitModel> jit =
      compileModelJit(std::move(model.module), std::move(model.context), target, model.accessor);
  const onnxc_model_descriptor &descriptor = *jit->descriptor();
  expectTinyDescriptor(descriptor, "tiny-jit");
  for (int64_t batch : {1, 3, 8}) {
    std::vector<float> x = sampleInput(batch);
    EXPECT_EQ(runByHand(descriptor, x, batch), expectedOutput(x)) << "batch " << batch;
  }
}

TEST(CodegenAotDescriptor, ArtifactConstantsGoToTheLargeDataSection) {
  TinyModel model = buildTinyModel(TargetSelection::select(), "large");
  llvm::GlobalVariable *constant = nullptr;
  for (llvm::GlobalVariable &global : model.module->globals())
    if (global.getName().starts_with("onnxc.const"))
      constant = &global;
  ASSERT_NE(constant, nullptr);
  EXPECT_TRUE(constant->hasInitializer());
  EXPECT_EQ(constant->getCodeModel(), llvm::CodeModel::Large);
}

TEST(CodegenAotDescriptor, JitBindsExternalConstantsToTheirBytes) {
  TargetSelection target = TargetSelection::select();
  TinyModel model = buildTinyModel(target, "tiny-jit", {}, ConstantPlacement::External);
  const std::string symbol = externalConstantName(2);
  llvm::GlobalVariable *declaration = model.module->getGlobalVariable(symbol);
  ASSERT_NE(declaration, nullptr);
  EXPECT_TRUE(declaration->isDeclaration()); // the bytes never enter LLVM
  // Borrowed bytes (the graph's, which may go before the model) are copied.
  std::vector<float> borrowed(RowConstant, RowConstant + 4);
  std::vector<JitConstant> constants = {
      {symbol, ConstantBytes(borrowed.data(), sizeof(RowConstant))}};
  std::unique_ptr<JitModel> jit = compileModelJit(std::move(model.module), std::move(model.context),
                                                  target, model.accessor, {}, std::move(constants));
  borrowed.assign(4, -1.0f);
  const onnxc_model_descriptor &descriptor = *jit->descriptor();
  expectTinyDescriptor(descriptor, "tiny-jit"); // 64-byte aligned, the constant's bytes
  EXPECT_NE(descriptor.buffers[2].constant_data, static_cast<const void *>(borrowed.data()));
  std::vector<float> x = sampleInput(3);
  EXPECT_EQ(runByHand(descriptor, x, 3), expectedOutput(x));
}

TEST(CodegenAotDescriptor, GenericX86_64CodeRunsToo) {
  TargetSelection target = TargetSelection::genericX86_64();
  TinyModel model = buildTinyModel(target);
  std::unique_ptr<JitModel> jit = compileModelJit(std::move(model.module), std::move(model.context),
                                                  target, GenericDescriptorAccessor);
  std::vector<float> x = sampleInput(5);
  EXPECT_EQ(runByHand(*jit->descriptor(), x, 5), expectedOutput(x));
}

TEST(CodegenAotDescriptor, InconsistentPlansNameTheCulprit) {
  TargetSelection target = TargetSelection::genericX86_64();
  auto failure = [&](auto breakPlan) {
    llvm::LLVMContext context;
    llvm::Module module("bad", context);
    target.configureModule(module);
    ModelPlan plan;
    plan.name = "bad";
    plan.symbols = {{"batch", 0, 0}};
    plan.inputs = {{"x", DType::F32, Shape({Dim::symbol("batch"), Dim(4)})}};
    plan.outputs = {{"y", DType::F32, Shape({Dim::symbol("batch"), Dim(4)})}};
    plan.buffers = {{BufferKind::Input, 0, Dim::symbol("batch") * Dim(16), {}, 0, 0}};
    plan.steps = {{"s", emitAddRowKernel(module), nullptr, {0}, {}}};
    breakPlan(plan);
    return errorOf([&] { emitDescriptor(module, plan); });
  };
  EXPECT_EQ(failure([](ModelPlan &) {}), "(no error)");
  EXPECT_EQ(failure([](ModelPlan &p) { p.symbols[0].axis = 1; }),
            "model 'bad': symbol 'batch' is read from axis 1 of input 'x' [batch, 4], which is "
            "not that symbol");
  EXPECT_EQ(failure([](ModelPlan &p) { p.steps[0].buffers = {7}; }),
            "model 'bad': step 's' uses buffer 7 but the model has 1");
  EXPECT_EQ(failure([](ModelPlan &p) { p.outputs[0].shape = Shape({Dim::symbol("seq")}); }),
            "model 'bad': output 'y' axis 0: dimension symbol 'seq' is not bound by any model "
            "input");
  EXPECT_EQ(
      failure([](ModelPlan &p) {
        p.buffers.push_back({BufferKind::Constant, 0, Dim(8), ConstantBytes("abcd", 4), 0, 0});
      }),
      "model 'bad': constant buffer 1 holds 4 bytes but its size is 8");
  EXPECT_EQ(failure([](ModelPlan &p) {
              p.buffers.push_back({BufferKind::Intermediate, 0, Dim(4), {}, 0, 3});
            }),
            "model 'bad': buffer 1 lives from step 0 to step 3 but the model has 1 steps");
}

TEST(CodegenAotHeader, DocumentsInputsOutputsAndSymbols) {
  TinyModel model = buildTinyModel(TargetSelection::genericX86_64(), "tiny.v1");
  std::string header = renderModelHeader(model.plan, "tiny.h");
  for (const char *expected :
       {"/*===- tiny.h - onnxc compiled model 'tiny.v1'", "#ifndef ONNXC_MODEL_TINY_V1_GENERATED_H",
        "#include \"onnxc/onnxc.h\"", "const onnxc_model_descriptor *onnxc_model_tiny_v1(void);",
        " *   0  x  f32 [batch, 4]  (ONNXC_F32)\n", " *   batch = dims[0] of input 'x'\n",
        "#define ONNXC_MODEL_TINY_V1_INPUT_X 0\n", "#define ONNXC_MODEL_TINY_V1_NUM_OUTPUTS 1\n",
        "#define ONNXC_DEFAULT_MODEL onnxc_model_tiny_v1\n"})
    EXPECT_NE(header.find(expected), std::string::npos) << expected << "\n" << header;
}
