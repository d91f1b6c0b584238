//===- codegen/ModelCompiler.cpp - Graph -> JIT model or model.so -----------===//

#include "codegen/ModelCompiler.h"

#include "codegen/kernels/Bf16Gemm.h"
#include "codegen/kernels/GemmPacking.h"

#include "codegen/CompilableShapes.h"
#include "codegen/artifact/DescriptorEmitter.h"
#include "codegen/artifact/HeaderWriter.h"
#include "codegen/artifact/ModelNameStub.h"
#include "codegen/artifact/SharedLibraryLinker.h"
#include "codegen/artifact/WeightsObject.h"
#include "codegen/lower/Lowering.h"
#include "ir/Error.h"
#include "onnxc/model_info.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <unistd.h>

#ifndef ONNXC_VERSION
#error "codegen/CMakeLists.txt defines ONNXC_VERSION (recorded in every descriptor)"
#endif

namespace onnxc {

namespace {

/// Removes a file when it goes out of scope (the intermediate object of a
/// shared-library build).
struct TemporaryFile {
  std::string path;
  ~TemporaryFile() {
    if (!path.empty())
      std::filesystem::remove(path);
  }
};

/// Every feature of the target the runtime can check goes into the
/// descriptor, not only those a kernel asked for: LLVM uses whatever the
/// target enables (AVX-512 in any vectorized loop of a --mcpu=native build
/// on an AVX-512 machine), and the same .so on a CPU without it would die of
/// SIGILL instead of being refused.
void recordTargetFeatures(const TargetSelection &target, ModelPlan &plan) {
  llvm::SmallVector<llvm::StringRef, 48> names;
  llvm::StringRef(onnxc_cpu_features_checked()).split(names, ',', -1, false);
  std::vector<std::string> checkable(names.begin(), names.end());
  for (std::string &feature : target.enabledFeatures(checkable))
    plan.cpuFeatures.insert(std::move(feature));
}

/// An intermediate object next to the library (same file system, so a
/// partially written library never replaces a good one mid-way), removed after.
std::string temporaryObjectPath(const std::string &outputPath, const char *what) {
  return outputPath + ".tmp" + std::to_string(getpid()) + "." + what + ".o";
}

/// Writes the plan's constant buffers, under the names the descriptor
/// declares, as the object at `path`.
void writeConstantBuffers(const ModelPlan &plan, const std::string &path,
                          const TargetSelection &target, const std::string &outputPath) {
  std::vector<WeightsSymbol> symbols;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer &buffer = plan.buffers[i];
    if (buffer.kind == BufferKind::Constant && buffer.constant.size > 0)
      symbols.push_back({externalConstantName(i), buffer.constant.data, buffer.constant.size});
  }
  try {
    writeWeightsObject(path, target.triple(), symbols);
  } catch (const Error &error) {
    // The temporary object is ours, not the user's: name the library.
    fail("cannot write '", outputPath, "' (its weights object: ", error.what(), ")");
  }
}

} // namespace

bool isValidModelName(const std::string &name) {
  auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  return !name.empty() && name.size() <= 200 && letter(name[0]) &&
         std::all_of(name.begin(), name.end(), [&](char c) { return letter(c) || digit(c); });
}

std::string modelNameForOutput(const std::string &outputPath) {
  std::string stem = std::filesystem::path(outputPath).stem().string();
  std::string name;
  for (char c : stem)
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (name.empty() || std::all_of(name.begin(), name.end(), [](char c) { return c == '_'; }))
    return "model";
  if (std::isdigit(static_cast<unsigned char>(name[0])))
    name = "_" + name;
  return name.size() > 200 ? name.substr(0, 200) : name;
}

LoweredModel lowerModel(const Graph &graph, const TargetSelection &target,
                        const std::string &modelName, const ProgressCallback &progress,
                        ConstantPlacement placement) {
  checkCompilableShapes(graph);
  LoweredModel model;
  model.context = std::make_unique<llvm::LLVMContext>();
  std::string name = modelName;
  if (name.empty())
    name = graph.name().empty() ? "model" : graph.name();
  model.module = std::make_unique<llvm::Module>(name, *model.context);
  target.configureModule(*model.module);
  LoweringOptions options;
  options.avx2Fma = target.hasFeature("avx2") && target.hasFeature("fma");
  // 512-bit GEMM tiles where the target has them (about 1.5x the 256-bit
  // kernel's throughput on a core with full-width FMA units).
  options.gemmLanes =
      options.avx2Fma && target.hasFeature("avx512f") ? GemmLanesAvx512 : GemmLanesAvx2;
  options.integerGemm = chooseIntegerGemmIsa(target);
  if (target.precision() == Precision::Bf16)
    options.bf16Gemm = chooseBf16GemmIsa(target);
  options.progress = progress;
  model.plan = lowerGraph(graph, *model.module, options);
  model.plan.name = name;
  model.plan.onnxcVersion = ONNXC_VERSION;
  recordTargetFeatures(target, model.plan);
  model.accessor = emitDescriptor(*model.module, model.plan, placement);
  return model;
}

std::unique_ptr<JitModel> compileModelJit(const Graph &graph, const TargetSelection &target,
                                          const ProgressCallback &progress) {
  LoweredModel model = lowerModel(graph, target, "", progress, ConstantPlacement::External);
  // The weights stay in memory, bound to the module's declarations.
  std::vector<JitConstant> constants;
  for (size_t i = 0; i < model.plan.buffers.size(); ++i) {
    PlanBuffer &buffer = model.plan.buffers[i];
    if (buffer.kind == BufferKind::Constant && buffer.constant.size > 0)
      constants.push_back({externalConstantName(i), std::move(buffer.constant)});
  }
  std::unique_ptr<JitModel> jit =
      compileModelJit(std::move(model.module), std::move(model.context), target, model.accessor,
                      progress, std::move(constants));
  notifyProgress(progress, {CompileStage::Done, "", 1, 1});
  return jit;
}

ModelPlan compileModelArtifact(const Graph &graph, const TargetSelection &target,
                               const ArtifactRequest &request, const ProgressCallback &progress) {
  std::string name =
      request.modelName.empty() ? modelNameForOutput(request.outputPath) : request.modelName;
  if (!isValidModelName(name))
    fail("model name '", name, "' is not a C identifier (letters, digits and '_', not starting ",
         "with a digit)");
  using Kind = ArtifactRequest::Kind;
  // A library's weights go straight from memory into an object of their own
  // (WeightsObject.h); the other artifacts are one file, the weights in it.
  bool separateWeights =
      request.kind == Kind::SharedLibrary && canWriteWeightsObject(target.triple());
  LoweredModel model =
      lowerModel(graph, target, name, progress,
                 separateWeights ? ConstantPlacement::External : ConstantPlacement::InModule);
  TemporaryFile weights;
  if (separateWeights) {
    weights.path = temporaryObjectPath(request.outputPath, "weights");
    writeConstantBuffers(model.plan, weights.path, target, request.outputPath);
  }
  // The weights are in the module's constants or the weights object now: the
  // plan keeps only their sizes, and packed copies nobody else holds are freed
  // before codegen.
  for (PlanBuffer &buffer : model.plan.buffers)
    if (buffer.kind == BufferKind::Constant)
      buffer.constant = ConstantBytes(nullptr, buffer.constant.size);
  switch (request.kind) {
  case Kind::Object:
    emitModule(*model.module, target, EmitKind::Object, request.outputPath, progress);
    break;
  case Kind::Assembly:
    emitModule(*model.module, target, EmitKind::Assembly, request.outputPath, progress);
    break;
  case Kind::LlvmIr:
    emitModule(*model.module, target, EmitKind::LlvmIr, request.outputPath, progress);
    break;
  case Kind::LlvmIrUnoptimized:
    emitModule(*model.module, target, EmitKind::LlvmIrUnoptimized, request.outputPath, progress);
    break;
  case Kind::SharedLibrary: {
    TemporaryFile object{temporaryObjectPath(request.outputPath, "model")};
    TemporaryFile nameObject{temporaryObjectPath(request.outputPath, "name")};
    try {
      // The model's code apart from its name, so that the compile cache
      // serves it under any name (ModelNameStub.h).
      std::unique_ptr<llvm::Module> stub = splitModelName(*model.module, model.accessor);
      model.plan.codeFromCache =
          emitModule(*model.module, target, EmitKind::Object, object.path, progress);
      // A few instructions: not a stage of its own for the progress callback,
      // nor worth a cache entry per name.
      emitModule(*stub, target, EmitKind::Object, nameObject.path, {}, /*cached=*/false);
    } catch (const Error &error) {
      // The temporary object is ours, not the user's: name the library.
      fail("cannot write '", request.outputPath, "' (its intermediate object: ", error.what(), ")");
    }
    // The last point to stop: lld writes the library whole or not at all,
    // and the header follows at once.
    reportProgress(progress, {CompileStage::Link, request.outputPath, 0, 1});
    std::vector<std::string> extraObjects{nameObject.path};
    if (!weights.path.empty())
      extraObjects.push_back(weights.path);
    linkSharedLibrary({object.path,
                       request.outputPath,
                       {model.accessor, GenericDescriptorAccessor},
                       "",
                       "",
                       extraObjects});
    std::string header = request.headerPath;
    if (header.empty()) {
      std::filesystem::path path(request.outputPath);
      header = path.replace_extension(".h").string();
    }
    writeModelHeader(model.plan, header);
    break;
  }
  }
  std::error_code error;
  uintmax_t bytes = std::filesystem::file_size(request.outputPath, error);
  notifyProgress(progress,
                 {CompileStage::Done, request.outputPath, 1, 1, error ? 0 : int64_t(bytes)});
  return std::move(model.plan);
}

} // namespace onnxc
