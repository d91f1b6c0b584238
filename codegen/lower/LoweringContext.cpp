//===- codegen/lower/LoweringContext.cpp - Buffers, steps, kernels ---------===//

#include "codegen/lower/LoweringContext.h"

#include "ir/Error.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

using namespace llvm;

namespace onnxc::lower {

namespace {

Dim byteSizeOf(const onnxc::Value *value, const Shape &shape) {
  Dim bytes(int64_t(dtypeSize(value->dtype())));
  for (size_t i = 0; i < shape.rank(); ++i)
    bytes = bytes * shape[i];
  return bytes;
}

Dim byteSizeOf(const onnxc::Value *value) { return byteSizeOf(value, value->shape()); }

} // namespace

// ---- KernelBuilder -------------------------------------------------------

KernelBuilder::KernelBuilder(Function *kernel, const SymbolIndex &symbolIndex)
    : FunctionBuilder(kernel, kernel->getArg(1), symbolIndex), buffers_(kernel->getArg(0)) {
  kernel->getArg(0)->setName("buffers");
  kernel->getArg(1)->setName("symbols");
  kernel->getArg(2)->setName("task_begin");
  kernel->getArg(3)->setName("task_end");
}

llvm::Value *KernelBuilder::buffer(unsigned slot) {
  if (auto it = bufferCache_.find(slot); it != bufferCache_.end())
    return it->second;
  IRBuilder<> &b = hoisted();
  llvm::Value *address = b.CreateConstInBoundsGEP1_64(b.getPtrTy(), buffers_, slot);
  LoadInst *pointer = b.CreateLoad(b.getPtrTy(), address, "buffer" + std::to_string(slot));
  bufferCache_[slot] = pointer;
  return pointer;
}

void KernelBuilder::failIf(llvm::Value *condition) {
  IRBuilder<> &b = ir();
  if (!failBlock_) {
    failBlock_ = llvm::BasicBlock::Create(context(), "fail", function_);
    IRBuilder<> failBuilder(failBlock_);
    failBuilder.CreateRet(failBuilder.getInt32(1));
  }
  llvm::BasicBlock *next = llvm::BasicBlock::Create(context(), "ok", function_);
  b.CreateCondBr(condition, failBlock_, next);
  b.SetInsertPoint(next);
}

llvm::Value *KernelBuilder::taskBegin() { return function_->getArg(2); }
llvm::Value *KernelBuilder::taskEnd() { return function_->getArg(3); }

// ---- StepBuilder ---------------------------------------------------------

StepBuilder::StepBuilder(LoweringContext &context, std::string name, std::string kernelName)
    : context_(context) {
  step_.name = std::move(name);
  Module &module = context.module();
  step_.kernel =
      Function::Create(kernelFunctionType(module.getContext()), GlobalValue::InternalLinkage,
                       context.uniqueName(kernelName), module);
  step_.kernel->addFnAttr(llvm::Attribute::NoUnwind);
  // No one compares kernel addresses: identical kernels may be merged.
  step_.kernel->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  for (unsigned i = 0; i < 2; ++i)
    step_.kernel->addParamAttr(i, llvm::Attribute::NoAlias);
  kernel_ = std::make_unique<KernelBuilder>(step_.kernel, context.symbolIndex());
}

StepBuilder::~StepBuilder() {
  // An abandoned step (its lowering threw) leaves no half-built function.
  if (!finished_ && step_.kernel) {
    kernel_.reset();
    if (step_.taskCount)
      step_.taskCount->eraseFromParent();
    step_.kernel->eraseFromParent();
  }
}

unsigned StepBuilder::input(const onnxc::Value *value) {
  step_.buffers.push_back(context_.bufferOf(value));
  return unsigned(step_.buffers.size() - 1);
}

unsigned StepBuilder::output(const onnxc::Value *value) {
  step_.buffers.push_back(context_.bufferOf(value));
  return unsigned(step_.buffers.size() - 1);
}

unsigned StepBuilder::constant(ConstantBytes bytes) {
  PlanBuffer buffer;
  buffer.kind = bytes.size ? BufferKind::Constant : BufferKind::Intermediate;
  buffer.sizeBytes = Dim(int64_t(bytes.size));
  buffer.constant = std::move(bytes);
  step_.buffers.push_back(context_.addBuffer(std::move(buffer)));
  return unsigned(step_.buffers.size() - 1);
}

unsigned StepBuilder::bufferSlot(int32_t planBuffer) {
  step_.buffers.push_back(planBuffer);
  return unsigned(step_.buffers.size() - 1);
}

void StepBuilder::setTaskCount(const SymbolicValue &count) {
  Module &module = context_.module();
  if (step_.taskCount)
    step_.taskCount->eraseFromParent();
  step_.taskCount =
      Function::Create(taskCountFunctionType(module.getContext()), GlobalValue::InternalLinkage,
                       step_.kernel->getName() + ".tasks", module);
  step_.taskCount->addFnAttr(llvm::Attribute::NoUnwind);
  step_.taskCount->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  FunctionBuilder f(step_.taskCount, step_.taskCount->getArg(0), context_.symbolIndex());
  llvm::Value *n = count(f);
  f.finish(f.max(n, f.i64(0)));
}

std::pair<llvm::Value *, llvm::Value *> StepBuilder::splitEvenly(const SymbolicValue &total,
                                                                 int64_t grain) {
  if (grain <= 0)
    fail("codegen: splitEvenly needs a positive grain");
  setTaskCount([&](FunctionBuilder &f) { return f.ceilDiv(total(f), f.i64(grain)); });
  KernelBuilder &k = *kernel_;
  IRBuilder<> &b = k.hoisted();
  // total(k) may emit through k.ir() too (ceilDiv, products): emit all of it
  // in the entry block, where begin/end are computed.
  llvm::Value *n;
  {
    IRBuilderBase::InsertPointGuard guard(k.ir());
    k.ir().SetInsertPoint(b.GetInsertBlock(), b.GetInsertPoint());
    n = total(k);
  }
  llvm::Value *begin = b.CreateMul(k.taskBegin(), b.getInt64(grain));
  llvm::Value *endRaw = b.CreateMul(k.taskEnd(), b.getInt64(grain));
  llvm::Value *end = b.CreateSelect(b.CreateICmpSLT(endRaw, n), endRaw, n);
  return {begin, end};
}

void StepBuilder::finish() { finish(kernel_->ir().getInt32(0)); }

void StepBuilder::finish(llvm::Value *status) {
  kernel_->finish(status);
  finished_ = true;
  context_.addStep(std::move(step_));
  step_ = PlanStep();
}

// ---- LoweringContext -----------------------------------------------------

LoweringContext::LoweringContext(const Graph &graph, Module &module, ModelPlan &plan)
    : graph_(graph), module_(module), plan_(plan) {
  symbolIndex_ = plan.symbolIndex();
}

const Shape &LoweringContext::layoutOf(const onnxc::Value *value) const {
  auto it = layouts_.find(value);
  return it != layouts_.end() ? it->second : value->shape();
}

const Tensor *LoweringContext::constantValue(const onnxc::Value *value) const {
  if (!value || !value->isConstant())
    return nullptr;
  const Tensor &tensor = value->constantValue();
  return tensor.hasData() || tensor.numElements() == 0 ? &tensor : nullptr;
}

StepBuilder LoweringContext::beginStep(const Node &node, const std::string &kernelName) {
  // "MatMul /encoder/layer.0/MatMul": the op first, so profiles group by it.
  std::string name = std::string(node.opName());
  if (!node.name().empty())
    name += " " + node.name();
  return StepBuilder(*this, name, kernelName);
}

void LoweringContext::alias(const onnxc::Value *result, const onnxc::Value *source) {
  if (graph_.isOutput(result) || buffers_.count(result)) {
    copyValue(source, result, result->name());
    return;
  }
  buffers_[result] = bufferOf(source);
}

bool LoweringContext::isAvailable(const onnxc::Value *value) const {
  if (!value || value->isGraphInput() || value->isConstant())
    return true;
  return lowered_.count(value->definingNode()) != 0;
}

void LoweringContext::claim(const Node &node) {
  claimed_.insert(&node);
  lowered_.insert(&node);
}

void LoweringContext::markLowered(const Node &node) { lowered_.insert(&node); }

void LoweringContext::unsupported(const Node &node, const std::string &reason) const {
  fail("cannot compile ", node.describe(), " (", node.opName(), "): ", reason);
}

void LoweringContext::requireCpuFeatures(const std::string &features) {
  size_t start = 0;
  while (start < features.size()) {
    size_t comma = features.find(',', start);
    if (comma == std::string::npos)
      comma = features.size();
    if (comma > start)
      plan_.cpuFeatures.insert(features.substr(start, comma - start));
    start = comma + 1;
  }
}

std::string LoweringContext::uniqueName(const std::string &base) {
  int &count = names_[base];
  std::string name = count == 0 ? base : base + "." + std::to_string(count);
  ++count;
  while (module_.getNamedValue(name))
    name = base + "." + std::to_string(count++);
  return name;
}

int32_t LoweringContext::addBuffer(PlanBuffer buffer) {
  plan_.buffers.push_back(std::move(buffer));
  return int32_t(plan_.buffers.size() - 1);
}

int32_t LoweringContext::addScratch(const Dim &bytes) {
  PlanBuffer buffer;
  buffer.kind = BufferKind::Intermediate;
  buffer.sizeBytes = bytes;
  return addBuffer(std::move(buffer));
}

int32_t LoweringContext::sharedConstant(const std::string &key,
                                        const std::function<ConstantBytes()> &make) {
  if (auto it = sharedConstants_.find(key); it != sharedConstants_.end())
    return it->second;
  PlanBuffer buffer;
  buffer.constant = make();
  buffer.kind = BufferKind::Constant;
  buffer.sizeBytes = Dim(int64_t(buffer.constant.size));
  int32_t index = addBuffer(std::move(buffer));
  sharedConstants_.emplace(key, index);
  return index;
}

int32_t LoweringContext::bufferOf(const onnxc::Value *value) {
  if (!value)
    fail("codegen: a step uses an absent optional value");
  if (auto it = buffers_.find(value); it != buffers_.end())
    return it->second;
  PlanBuffer buffer;
  for (size_t i = 0; i < value->shape().rank(); ++i)
    if (value->shape()[i].isUnknown())
      fail("cannot compile: value '", value->name(), "' has a data-dependent dimension (shape ",
           value->shape().str(), ")");
  buffer.sizeBytes = byteSizeOf(value, layoutOf(value));
  if (value->isGraphInput()) {
    buffer.kind = BufferKind::Input;
    const auto &inputs = graph_.inputs();
    buffer.index = int32_t(std::find(inputs.begin(), inputs.end(), value) - inputs.begin());
  } else if (value->isConstant() && value->constantValue().byteSize() == 0) {
    // An empty constant has no bytes to embed; nothing reads any either.
    buffer.kind = BufferKind::Intermediate;
  } else if (value->isConstant()) {
    buffer.kind = BufferKind::Constant;
    const Tensor &tensor = value->constantValue();
    if (!tensor.hasData() && tensor.numElements() != 0)
      fail("cannot compile: constant '", value->name(), "' has no data (elided in the text IR)");
    ConstantBytes bytes(tensor.rawData(), tensor.byteSize());
    bytes.owner = value->constantPtr();
    buffer.constant = std::move(bytes);
  } else {
    buffer.kind = BufferKind::Intermediate;
    const auto &outputs = graph_.outputs();
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].value == value) {
        buffer.kind = BufferKind::Output;
        buffer.index = int32_t(i);
        break;
      }
  }
  int32_t index = addBuffer(std::move(buffer));
  buffers_[value] = index;
  return index;
}

void LoweringContext::copyValue(const onnxc::Value *source, const onnxc::Value *destination,
                                const std::string &name) {
  int32_t from = bufferOf(source);
  int32_t to = bufferOf(destination);
  copyBuffer(from, to, byteSizeOf(destination), name);
}

void LoweringContext::copyBuffer(int32_t from, int32_t to, const Dim &bytes,
                                 const std::string &name) {
  // Chunks of 256 KiB: large enough to amortize a task, small enough that a
  // big copy spreads over the threads.
  constexpr int64_t Chunk = 256 * 1024;
  StepBuilder step(*this, name, "copy");
  unsigned in = step.bufferSlot(from);
  unsigned out = step.bufferSlot(to);
  auto total = [bytes](FunctionBuilder &f) { return f.dim(bytes); };
  auto [begin, end] = step.splitEvenly(total, Chunk);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  llvm::Value *source = b.CreateInBoundsGEP(b.getInt8Ty(), k.buffer(in), begin);
  llvm::Value *target = b.CreateInBoundsGEP(b.getInt8Ty(), k.buffer(out), begin);
  llvm::Value *count = b.CreateSub(end, begin);
  k.ifThen(b.CreateICmpSGT(count, k.i64(0)),
           [&] { b.CreateMemCpy(target, MaybeAlign(1), source, MaybeAlign(1), count); });
  step.finish();
  plan_.steps.back().isCopy = true;
}

void LoweringContext::finalize() {
  // Graph outputs whose bytes no step wrote into their own Output buffer: a
  // graph input or constant returned as is, a view, or a value returned
  // twice.
  const auto &outputs = graph_.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const onnxc::Value *value = outputs[i].value;
    int32_t current = bufferOf(value);
    const PlanBuffer &buffer = plan_.buffers[current];
    if (buffer.kind == BufferKind::Output && buffer.index == int32_t(i))
      continue;
    PlanBuffer target;
    target.kind = BufferKind::Output;
    target.index = int32_t(i);
    target.sizeBytes = byteSizeOf(value);
    int32_t to = addBuffer(target);
    copyBuffer(current, to, target.sizeBytes, outputs[i].name);
  }

  // Lifetimes of intermediates: from the first to the last step naming them.
  std::vector<int32_t> first(plan_.buffers.size(), -1), last(plan_.buffers.size(), -1);
  for (size_t s = 0; s < plan_.steps.size(); ++s)
    for (int32_t b : plan_.steps[s].buffers) {
      if (first[b] < 0)
        first[b] = int32_t(s);
      last[b] = int32_t(s);
    }
  for (size_t b = 0; b < plan_.buffers.size(); ++b) {
    PlanBuffer &buffer = plan_.buffers[b];
    if (buffer.kind != BufferKind::Intermediate)
      continue;
    buffer.firstStep = std::max(first[b], 0);
    buffer.lastStep = std::max(last[b], 0);
  }
}

} // namespace onnxc::lower
