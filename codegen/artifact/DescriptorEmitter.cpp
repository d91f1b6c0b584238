//===- codegen/artifact/DescriptorEmitter.cpp - ModelPlan -> onnxc_model_descriptor -===//
#include "codegen/artifact/DescriptorEmitter.h"

#include "codegen/artifact/DimEncoding.h"
#include "ir/Error.h"
#include "onnxc/model_abi.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <optional>

namespace onnxc {

llvm::FunctionType *kernelFunctionType(llvm::LLVMContext &context) {
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  return llvm::FunctionType::get(llvm::Type::getInt32Ty(context), {ptr, ptr, i64, i64}, false);
}

llvm::FunctionType *taskCountFunctionType(llvm::LLVMContext &context) {
  return llvm::FunctionType::get(llvm::Type::getInt64Ty(context),
                                 {llvm::PointerType::getUnqual(context)}, false);
}

std::string descriptorAccessorName(std::string_view modelName) {
  std::string name = "onnxc_model_";
  for (char c : modelName)
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return modelName.empty() ? name + "model" : name;
}

namespace {

/// "a,b,c": the comma-separated form of cpu_features.
std::string cpuFeatureList(const std::set<std::string> &features) {
  std::string list;
  for (const std::string &feature : features)
    list += (list.empty() ? "" : ",") + feature;
  return list;
}

/// The model_abi.h structs as LLVM types. Natural (non-packed) struct layout
/// gives C's offsets; checkDescriptorLayout verifies that per field.
struct AbiTypes {
  explicit AbiTypes(llvm::LLVMContext &context)
      : i32(llvm::Type::getInt32Ty(context)), i64(llvm::Type::getInt64Ty(context)),
        ptr(llvm::PointerType::getUnqual(context)) {
    tensorInfo = named(context, "onnxc_tensor_info", {ptr, i32, i32, ptr, ptr});
    symbolSource = named(context, "onnxc_symbol_source", {i32, i32});
    buffer = named(context, "onnxc_buffer", {i32, i32, ptr, ptr, i32, i32});
    step = named(context, "onnxc_step", {ptr, ptr, ptr, i32, ptr, ptr, i32, i32});
    assumption = named(context, "onnxc_assumption", {ptr, i32, ptr});
    cachePair = named(context, "onnxc_cache_pair", {i32, i32, i32, i32, i32});
    descriptor = named(context, "onnxc_model_descriptor",
                       {i32, ptr, i32, ptr, ptr, i32, ptr, i32, ptr, i32, ptr,
                        i32, ptr, i32, ptr, i32, ptr, ptr, ptr, ptr, ptr});
  }

  static llvm::StructType *named(llvm::LLVMContext &context, const char *name,
                                 llvm::ArrayRef<llvm::Type *> fields) {
    if (llvm::StructType *existing = llvm::StructType::getTypeByName(context, name))
      return existing;
    return llvm::StructType::create(context, fields, name);
  }

  llvm::IntegerType *i32, *i64;
  llvm::PointerType *ptr;
  llvm::StructType *tensorInfo, *symbolSource, *buffer, *step, *assumption, *cachePair, *descriptor;
};

void checkStruct(const llvm::DataLayout &layout, llvm::StructType *type, size_t cSize,
                 std::initializer_list<size_t> cOffsets) {
  const llvm::StructLayout *structLayout = layout.getStructLayout(type);
  if (cOffsets.size() != type->getNumElements())
    fail("descriptor layout: ", type->getName().str(), " has ", type->getNumElements(),
         " fields but model_abi.h has ", cOffsets.size());
  unsigned field = 0;
  for (size_t cOffset : cOffsets) {
    uint64_t offset = structLayout->getElementOffset(field);
    if (offset != cOffset)
      fail("descriptor layout: field ", field, " of ", type->getName().str(), " is at offset ",
           offset, " for the target but ", cOffset, " in model_abi.h");
    ++field;
  }
  if (structLayout->getSizeInBytes() != cSize)
    fail("descriptor layout: ", type->getName().str(), " is ", structLayout->getSizeInBytes(),
         " bytes for the target but ", cSize, " in model_abi.h");
}

int32_t abiDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ONNXC_F32;
  case DType::F64:
    return ONNXC_F64;
  case DType::F16:
    return ONNXC_F16;
  case DType::BF16:
    return ONNXC_BF16;
  case DType::I8:
    return ONNXC_I8;
  case DType::U8:
    return ONNXC_U8;
  case DType::I16:
    return ONNXC_I16;
  case DType::U16:
    return ONNXC_U16;
  case DType::I32:
    return ONNXC_I32;
  case DType::U32:
    return ONNXC_U32;
  case DType::I64:
    return ONNXC_I64;
  case DType::U64:
    return ONNXC_U64;
  case DType::Bool:
    return ONNXC_BOOL;
  case DType::I4:
  case DType::U4: // refused as inputs and outputs (tensorInfos, below)
  case DType::Unknown:
    break;
  }
  return 0;
}

/// Builds the descriptor's globals for one plan. Each piece of data becomes
/// a private constant global; identical dim expressions and strings are
/// shared.
class DescriptorBuilder {
public:
  DescriptorBuilder(llvm::Module &module, const ModelPlan &plan, ConstantPlacement placement)
      : module_(module), context_(module.getContext()), plan_(plan), placement_(placement),
        types_(context_), symbolIndex_(plan.symbolIndex()) {}

  llvm::GlobalVariable *build();

private:
  llvm::Constant *global(llvm::Constant *init, const std::string &name, unsigned align = 0);
  llvm::Constant *array(llvm::Type *element, const std::vector<llvm::Constant *> &items,
                        const std::string &name);
  llvm::Constant *string(const std::string &text);
  llvm::Constant *dimExpr(const Dim &dim, const std::string &context);
  llvm::Constant *tensorInfos(const std::vector<PlanTensor> &tensors, const char *role);
  llvm::Constant *symbolNames();
  llvm::Constant *symbolSources();
  llvm::Constant *buffers();
  llvm::Constant *constantData(const PlanBuffer &buffer, size_t position);
  llvm::Constant *steps();
  llvm::Constant *assumptions();
  llvm::Constant *cachePairs();
  llvm::Constant *indexBounds();
  bool isCapacitySymbol(const std::string &name) const;
  llvm::Constant *kernelPointer(llvm::Function *function, llvm::FunctionType *expected,
                                const PlanStep &step, const char *role);
  llvm::Constant *i32(int64_t value) { return llvm::ConstantInt::get(types_.i32, value); }
  llvm::Constant *null() { return llvm::ConstantPointerNull::get(types_.ptr); }

  llvm::Module &module_;
  llvm::LLVMContext &context_;
  const ModelPlan &plan_;
  ConstantPlacement placement_;
  AbiTypes types_;
  std::map<std::string, int32_t> symbolIndex_;
  std::map<std::vector<int64_t>, llvm::Constant *> dimCache_;
  std::map<std::string, llvm::Constant *> stringCache_;
};

llvm::Constant *DescriptorBuilder::global(llvm::Constant *init, const std::string &name,
                                          unsigned align) {
  auto *variable =
      new llvm::GlobalVariable(module_, init->getType(), /*isConstant=*/true,
                               llvm::GlobalValue::PrivateLinkage, init, "onnxc." + name);
  variable->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  if (align)
    variable->setAlignment(llvm::Align(align));
  return variable;
}

llvm::Constant *DescriptorBuilder::array(llvm::Type *element,
                                         const std::vector<llvm::Constant *> &items,
                                         const std::string &name) {
  if (items.empty())
    return null();
  auto *type = llvm::ArrayType::get(element, items.size());
  return global(llvm::ConstantArray::get(type, items), name);
}

llvm::Constant *DescriptorBuilder::string(const std::string &text) {
  auto [it, inserted] = stringCache_.emplace(text, nullptr);
  if (inserted)
    it->second = global(llvm::ConstantDataArray::getString(context_, text), "str");
  return it->second;
}

llvm::Constant *DescriptorBuilder::dimExpr(const Dim &dim, const std::string &context) {
  std::vector<int64_t> words;
  try {
    words = encodeDim(dim, symbolIndex_);
  } catch (const Error &error) {
    fail("model '", plan_.name, "': ", context, ": ", error.what());
  }
  auto [it, inserted] = dimCache_.emplace(words, nullptr);
  if (inserted) {
    std::vector<uint64_t> unsignedWords(words.begin(), words.end());
    it->second = global(llvm::ConstantDataArray::get(context_, unsignedWords), "dim");
  }
  return it->second;
}

llvm::Constant *DescriptorBuilder::tensorInfos(const std::vector<PlanTensor> &tensors,
                                               const char *role) {
  std::vector<llvm::Constant *> infos;
  for (const PlanTensor &tensor : tensors) {
    std::string where = std::string(role) + " '" + tensor.name + "'";
    if (!tensor.shape.isRanked())
      fail("model '", plan_.name, "': ", where, " has no known rank");
    if (isFourBit(tensor.dtype))
      fail("model '", plan_.name, "': ", where, " is ", dtypeName(tensor.dtype),
           ": compiled models take no 4-bit inputs or outputs (only constants and values "
           "inside the model may be 4-bit)");
    if (abiDType(tensor.dtype) == 0)
      fail("model '", plan_.name, "': ", where, " has no known element type");
    std::vector<llvm::Constant *> dims;
    for (size_t axis = 0; axis < tensor.shape.rank(); ++axis)
      dims.push_back(dimExpr(tensor.shape[axis], where + " axis " + std::to_string(axis)));
    infos.push_back(llvm::ConstantStruct::get(
        types_.tensorInfo,
        {string(tensor.name), i32(abiDType(tensor.dtype)), i32(int64_t(tensor.shape.rank())),
         array(types_.ptr, dims, "dims"), string(tensor.shape.str())}));
  }
  return array(types_.tensorInfo, infos, std::string(role) + "s");
}

llvm::Constant *DescriptorBuilder::symbolNames() {
  std::vector<llvm::Constant *> names;
  for (const PlanSymbol &symbol : plan_.symbols)
    names.push_back(string(symbol.name));
  return array(types_.ptr, names, "symbol_names");
}

llvm::Constant *DescriptorBuilder::symbolSources() {
  std::vector<llvm::Constant *> sources;
  for (const PlanSymbol &symbol : plan_.symbols) {
    if (symbol.input == -1 && symbol.axis == -1 && isCapacitySymbol(symbol.name)) {
      sources.push_back(llvm::ConstantStruct::get(types_.symbolSource, {i32(-1), i32(-1)}));
      continue;
    }
    if (symbol.input < 0 || size_t(symbol.input) >= plan_.inputs.size())
      fail("model '", plan_.name, "': symbol '", symbol.name, "' is read from input ", symbol.input,
           " but the model has ", plan_.inputs.size(), " inputs");
    const PlanTensor &input = plan_.inputs[symbol.input];
    const Shape &shape = input.shape;
    // The runtime binds the symbol from exactly this axis, so the axis must be the bare symbol.
    if (symbol.axis < 0 || size_t(symbol.axis) >= shape.rank() || !shape[symbol.axis].isSymbol() ||
        shape[symbol.axis].symbolName() != symbol.name)
      fail("model '", plan_.name, "': symbol '", symbol.name, "' is read from axis ", symbol.axis,
           " of input '", input.name, "' ", shape.str(), ", which is not that symbol");
    sources.push_back(
        llvm::ConstantStruct::get(types_.symbolSource, {i32(symbol.input), i32(symbol.axis)}));
  }
  return array(types_.symbolSource, sources, "symbol_sources");
}

llvm::Constant *DescriptorBuilder::constantData(const PlanBuffer &buffer, size_t position) {
  std::string where = "constant buffer " + std::to_string(position);
  std::optional<int64_t> size = buffer.sizeBytes.constant();
  if (!size || uint64_t(*size) != buffer.constant.size)
    fail("model '", plan_.name, "': ", where, " holds ", buffer.constant.size,
         " bytes but its size is ", buffer.sizeBytes.str());
  // An empty tensor still needs a non-null pointer (the runtime refuses
  // constants without data); no kernel reads this byte.
  if (buffer.constant.size == 0)
    return global(llvm::ConstantDataArray::get(context_, llvm::ArrayRef<uint8_t>{0}), "const", 64);
  if (!buffer.constant.data)
    fail("model '", plan_.name, "': ", where, " has no data");
  llvm::Type *byteType = llvm::Type::getInt8Ty(context_);
  if (placement_ == ConstantPlacement::External) {
    auto *declaration = new llvm::GlobalVariable(
        module_, llvm::ArrayType::get(byteType, buffer.constant.size), /*isConstant=*/true,
        llvm::GlobalValue::ExternalLinkage, nullptr, externalConstantName(position));
    declaration->setAlignment(llvm::Align(64));
    return declaration;
  }
  llvm::StringRef bytes(reinterpret_cast<const char *>(buffer.constant.data), buffer.constant.size);
  // 64 bytes: a cache line, and enough for any aligned vector load of packed weights.
  auto *variable = llvm::cast<llvm::GlobalVariable>(
      global(llvm::ConstantDataArray::getRaw(bytes, bytes.size(), byteType), "const", 64));
  // .lrodata: only the descriptor (a 64-bit pointer) refers to the bytes.
  variable->setCodeModel(llvm::CodeModel::Large);
  return variable;
}

llvm::Constant *DescriptorBuilder::buffers() {
  std::vector<llvm::Constant *> buffers;
  int64_t numSteps = int64_t(plan_.steps.size());
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const PlanBuffer &buffer = plan_.buffers[i];
    std::string where = "buffer " + std::to_string(i);
    llvm::Constant *data = null();
    switch (buffer.kind) {
    case BufferKind::Input:
    case BufferKind::Output: {
      size_t count = buffer.kind == BufferKind::Input ? plan_.inputs.size() : plan_.outputs.size();
      if (buffer.index < 0 || size_t(buffer.index) >= count)
        fail("model '", plan_.name, "': ", where, " refers to ",
             buffer.kind == BufferKind::Input ? "input " : "output ", buffer.index,
             " but the model has ", count);
      break;
    }
    case BufferKind::Intermediate:
      if (buffer.firstStep < 0 || buffer.firstStep > buffer.lastStep || buffer.lastStep >= numSteps)
        fail("model '", plan_.name, "': ", where, " lives from step ", buffer.firstStep,
             " to step ", buffer.lastStep, " but the model has ", numSteps, " steps");
      break;
    case BufferKind::Constant:
      data = constantData(buffer, i);
      break;
    default:
      fail("model '", plan_.name, "': ", where, " has an invalid kind ", int32_t(buffer.kind));
    }
    if (buffer.kind != BufferKind::Constant && buffer.constant.data)
      fail("model '", plan_.name, "': ", where, " has constant bytes but is not a constant");
    buffers.push_back(
        llvm::ConstantStruct::get(types_.buffer, {i32(int32_t(buffer.kind)), i32(buffer.index),
                                                  dimExpr(buffer.sizeBytes, where + " size"), data,
                                                  i32(buffer.firstStep), i32(buffer.lastStep)}));
  }
  return array(types_.buffer, buffers, "buffers");
}

llvm::Constant *DescriptorBuilder::kernelPointer(llvm::Function *function,
                                                 llvm::FunctionType *expected, const PlanStep &step,
                                                 const char *role) {
  if (!function)
    return null();
  if (function->getParent() != &module_)
    fail("model '", plan_.name, "': step '", step.name, "': ", role, " '",
         function->getName().str(), "' is not in the module being compiled");
  if (function->getFunctionType() != expected)
    fail("model '", plan_.name, "': step '", step.name, "': ", role, " '",
         function->getName().str(), "' does not have the ABI's type");
  // Reached only through the descriptor; internal linkage keeps it out of model.so's exports.
  if (!function->isDeclaration())
    function->setLinkage(llvm::GlobalValue::InternalLinkage);
  return function;
}

llvm::Constant *DescriptorBuilder::steps() {
  std::vector<llvm::Constant *> steps;
  for (const PlanStep &step : plan_.steps) {
    if (!step.kernel)
      fail("model '", plan_.name, "': step '", step.name, "' has no kernel");
    std::vector<llvm::Constant *> indices;
    for (int32_t index : step.buffers) {
      if (index < 0 || size_t(index) >= plan_.buffers.size())
        fail("model '", plan_.name, "': step '", step.name, "' uses buffer ", index,
             " but the model has ", plan_.buffers.size());
      indices.push_back(i32(index));
    }
    if (step.isBranch &&
        (step.taskCount || step.branchTarget < 0 || size_t(step.branchTarget) > plan_.steps.size()))
      fail("model '", plan_.name, "': branch step '", step.name, "' has a task count or targets ",
           "step ", step.branchTarget, " of ", plan_.steps.size());
    steps.push_back(llvm::ConstantStruct::get(
        types_.step,
        {string(step.name),
         kernelPointer(step.kernel, kernelFunctionType(context_), step, "kernel"),
         kernelPointer(step.taskCount, taskCountFunctionType(context_), step, "task count"),
         i32(int64_t(indices.size())), array(types_.i32, indices, "step_buffers"),
         step.failure.empty() ? llvm::ConstantPointerNull::get(types_.ptr) : string(step.failure),
         i32(step.isBranch ? ONNXC_STEP_BRANCH : ONNXC_STEP_KERNEL),
         i32(step.isBranch ? step.branchTarget : 0)}));
  }
  return array(types_.step, steps, "steps");
}

llvm::Constant *DescriptorBuilder::assumptions() {
  std::vector<llvm::Constant *> items;
  for (const PlanAssumption &assumption : plan_.assumptions) {
    if (assumption.kind != ONNXC_ASSUME_ZERO && assumption.kind != ONNXC_ASSUME_NONNEGATIVE)
      fail("model '", plan_.name, "': assumption '", assumption.message, "' has an invalid kind ",
           assumption.kind);
    items.push_back(llvm::ConstantStruct::get(
        types_.assumption, {dimExpr(assumption.expr, "assumption '" + assumption.message + "'"),
                            i32(assumption.kind), string(assumption.message)}));
  }
  return array(types_.assumption, items, "assumptions");
}

bool DescriptorBuilder::isCapacitySymbol(const std::string &name) const {
  for (const PlanCachePair &pair : plan_.cachePairs)
    for (int32_t symbol : {pair.capacitySymbol, pair.pastCapacitySymbol})
      if (symbol >= 0 && size_t(symbol) < plan_.symbols.size() &&
          plan_.symbols[symbol].name == name)
        return true;
  return false;
}

llvm::Constant *DescriptorBuilder::cachePairs() {
  std::vector<llvm::Constant *> items;
  for (const PlanCachePair &pair : plan_.cachePairs) {
    if (pair.input < 0 || size_t(pair.input) >= plan_.inputs.size() || pair.output < 0 ||
        size_t(pair.output) >= plan_.outputs.size() || pair.capacitySymbol < 0 ||
        size_t(pair.capacitySymbol) >= plan_.symbols.size() || pair.pastCapacitySymbol < 0 ||
        size_t(pair.pastCapacitySymbol) >= plan_.symbols.size() || pair.axis < 0 ||
        size_t(pair.axis) >= plan_.inputs[pair.input].shape.rank())
      fail("model '", plan_.name, "': cache pair (input ", pair.input, ", output ", pair.output,
           ", axis ", pair.axis, ", capacity symbol ", pair.capacitySymbol, ") is out of range");
    items.push_back(llvm::ConstantStruct::get(
        types_.cachePair, {i32(pair.input), i32(pair.output), i32(pair.axis),
                           i32(pair.capacitySymbol), i32(pair.pastCapacitySymbol)}));
  }
  return array(types_.cachePair, items, "cache_pairs");
}

llvm::Constant *DescriptorBuilder::indexBounds() {
  if (plan_.inputs.empty())
    return null();
  std::vector<uint64_t> bounds;
  for (const PlanTensor &input : plan_.inputs)
    bounds.push_back(uint64_t(std::max<int64_t>(input.indexBound, 0)));
  return global(llvm::ConstantDataArray::get(context_, bounds), "input_index_bounds", 8);
}

llvm::GlobalVariable *DescriptorBuilder::build() {
  // Symbol sources first: they validate what every later dim expression relies on.
  llvm::Constant *sources = symbolSources();
  llvm::Constant *init =
      llvm::ConstantStruct::get(types_.descriptor, {i32(ONNXC_ABI_VERSION),
                                                    string(plan_.name),
                                                    i32(int64_t(plan_.symbols.size())),
                                                    symbolNames(),
                                                    sources,
                                                    i32(int64_t(plan_.inputs.size())),
                                                    tensorInfos(plan_.inputs, "input"),
                                                    i32(int64_t(plan_.outputs.size())),
                                                    tensorInfos(plan_.outputs, "output"),
                                                    i32(int64_t(plan_.buffers.size())),
                                                    buffers(),
                                                    i32(int64_t(plan_.steps.size())),
                                                    steps(),
                                                    i32(int64_t(plan_.assumptions.size())),
                                                    assumptions(),
                                                    i32(int64_t(plan_.cachePairs.size())),
                                                    cachePairs(),
                                                    string(plan_.precision),
                                                    string(cpuFeatureList(plan_.cpuFeatures)),
                                                    string(plan_.onnxcVersion),
                                                    indexBounds()});
  return llvm::cast<llvm::GlobalVariable>(global(init, "descriptor", 8));
}

void emitAccessor(llvm::Module &module, const std::string &name, llvm::GlobalVariable *descriptor) {
  if (module.getNamedValue(name))
    fail("the module already defines '", name, "'; cannot export the model descriptor under it");
  llvm::LLVMContext &context = module.getContext();
  auto *type = llvm::FunctionType::get(llvm::PointerType::getUnqual(context), false);
  auto *accessor = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, name, module);
  accessor->setDoesNotThrow();
  accessor->setVisibility(llvm::GlobalValue::DefaultVisibility);
  llvm::ReturnInst::Create(context, descriptor,
                           llvm::BasicBlock::Create(context, "entry", accessor));
}

} // namespace

void checkDescriptorLayout(const llvm::Module &module) {
  const llvm::DataLayout &layout = module.getDataLayout();
  AbiTypes types(module.getContext());
  checkStruct(layout, types.tensorInfo, sizeof(onnxc_tensor_info),
              {offsetof(onnxc_tensor_info, name), offsetof(onnxc_tensor_info, dtype),
               offsetof(onnxc_tensor_info, rank), offsetof(onnxc_tensor_info, dims),
               offsetof(onnxc_tensor_info, shape_text)});
  checkStruct(layout, types.symbolSource, sizeof(onnxc_symbol_source),
              {offsetof(onnxc_symbol_source, input), offsetof(onnxc_symbol_source, axis)});
  checkStruct(layout, types.buffer, sizeof(onnxc_buffer),
              {offsetof(onnxc_buffer, kind), offsetof(onnxc_buffer, index),
               offsetof(onnxc_buffer, size_bytes), offsetof(onnxc_buffer, constant_data),
               offsetof(onnxc_buffer, first_step), offsetof(onnxc_buffer, last_step)});
  checkStruct(layout, types.step, sizeof(onnxc_step),
              {offsetof(onnxc_step, name), offsetof(onnxc_step, kernel),
               offsetof(onnxc_step, task_count), offsetof(onnxc_step, num_buffers),
               offsetof(onnxc_step, buffers), offsetof(onnxc_step, failure),
               offsetof(onnxc_step, kind), offsetof(onnxc_step, branch_target)});
  checkStruct(layout, types.assumption, sizeof(onnxc_assumption),
              {offsetof(onnxc_assumption, expr), offsetof(onnxc_assumption, kind),
               offsetof(onnxc_assumption, message)});
  checkStruct(layout, types.cachePair, sizeof(onnxc_cache_pair),
              {offsetof(onnxc_cache_pair, input), offsetof(onnxc_cache_pair, output),
               offsetof(onnxc_cache_pair, axis), offsetof(onnxc_cache_pair, capacity_symbol),
               offsetof(onnxc_cache_pair, past_capacity_symbol)});
  using D = onnxc_model_descriptor;
  checkStruct(layout, types.descriptor, sizeof(D), {offsetof(D, abi_version),
                                                    offsetof(D, model_name),
                                                    offsetof(D, num_symbols),
                                                    offsetof(D, symbol_names),
                                                    offsetof(D, symbol_sources),
                                                    offsetof(D, num_inputs),
                                                    offsetof(D, inputs),
                                                    offsetof(D, num_outputs),
                                                    offsetof(D, outputs),
                                                    offsetof(D, num_buffers),
                                                    offsetof(D, buffers),
                                                    offsetof(D, num_steps),
                                                    offsetof(D, steps),
                                                    offsetof(D, num_assumptions),
                                                    offsetof(D, assumptions),
                                                    offsetof(D, num_cache_pairs),
                                                    offsetof(D, cache_pairs),
                                                    offsetof(D, precision),
                                                    offsetof(D, cpu_features),
                                                    offsetof(D, onnxc_version),
                                                    offsetof(D, input_index_bounds)});
}

std::string externalConstantName(size_t bufferIndex) {
  return "onnxc.const." + std::to_string(bufferIndex);
}

std::string emitDescriptor(llvm::Module &module, const ModelPlan &plan,
                           ConstantPlacement placement) {
  if (module.getDataLayout().isDefault() && module.getTargetTriple().empty())
    fail("model '", plan.name, "': the module has no target; call configureModule first");
  checkDescriptorLayout(module);
  llvm::GlobalVariable *descriptor = DescriptorBuilder(module, plan, placement).build();
  std::string name = descriptorAccessorName(plan.name);
  emitAccessor(module, name, descriptor);
  emitAccessor(module, GenericDescriptorAccessor, descriptor);
  return name;
}

} // namespace onnxc
