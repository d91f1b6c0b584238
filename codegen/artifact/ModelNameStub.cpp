//===- codegen/artifact/ModelNameStub.cpp - A model's name apart from its code -===//
#include "codegen/artifact/ModelNameStub.h"

#include "codegen/artifact/DescriptorEmitter.h"
#include "ir/Error.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

namespace onnxc {

namespace {

/// The descriptor `generic` returns (emitDescriptor's accessors return it).
llvm::GlobalVariable *descriptorOf(llvm::Function *generic) {
  if (!generic || generic->isDeclaration())
    return nullptr;
  auto *ret = llvm::dyn_cast<llvm::ReturnInst>(generic->getEntryBlock().getTerminator());
  return ret ? llvm::dyn_cast_or_null<llvm::GlobalVariable>(ret->getReturnValue()) : nullptr;
}

} // namespace

std::unique_ptr<llvm::Module> splitModelName(llvm::Module &module, const std::string &accessor) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Function *named = module.getFunction(accessor);
  llvm::Function *generic = module.getFunction(GenericDescriptorAccessor);
  llvm::GlobalVariable *descriptor = descriptorOf(generic);
  auto *fields = descriptor && descriptor->hasInitializer()
                     ? llvm::dyn_cast<llvm::ConstantStruct>(descriptor->getInitializer())
                     : nullptr;
  // Field 1 is model_name (model_abi.h; checkDescriptorLayout).
  auto *nameString = fields && fields->getNumOperands() > 1
                         ? llvm::dyn_cast<llvm::GlobalVariable>(fields->getOperand(1))
                         : nullptr;
  auto *nameData = nameString && nameString->hasInitializer()
                       ? llvm::dyn_cast<llvm::ConstantDataSequential>(nameString->getInitializer())
                       : nullptr;
  if (!named || !nameData || !nameData->isCString())
    fail("module '", module.getName().str(), "' has no model descriptor with accessor '", accessor,
         "' to take the model's name from");
  const std::string name = nameData->getAsCString().str();

  // The model module reads the name through a declaration; only its
  // address matters there, so its type is a byte whatever the name's length.
  auto *declared =
      new llvm::GlobalVariable(module, llvm::Type::getInt8Ty(context), /*isConstant=*/true,
                               llvm::GlobalValue::ExternalLinkage, nullptr, ModelNameSymbol);
  declared->setVisibility(llvm::GlobalValue::HiddenVisibility);
  std::vector<llvm::Constant *> values;
  for (unsigned i = 0; i < fields->getNumOperands(); ++i)
    values.push_back(fields->getOperand(i));
  values[1] = declared;
  descriptor->setInitializer(llvm::ConstantStruct::get(fields->getType(), values));
  // Strings are shared: an input of the model's name keeps using this one.
  // The old initializer still uses it until it is dropped as dead.
  nameString->removeDeadConstantUsers();
  if (nameString->use_empty())
    nameString->eraseFromParent();
  llvm::FunctionType *accessorType = named->getFunctionType();
  named->eraseFromParent();
  // The stub's accessor returns the descriptor itself, under a hidden name:
  // a call to the exported onnxc_descriptor could bind to another loaded
  // library's (ELF interposition), a hidden symbol binds within the library.
  descriptor->setName(DescriptorSymbol);
  descriptor->setLinkage(llvm::GlobalValue::ExternalLinkage);
  descriptor->setVisibility(llvm::GlobalValue::HiddenVisibility);
  descriptor->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::None);
  module.setModuleIdentifier("onnxc_model");
  module.setSourceFileName("onnxc_model");

  auto stub = std::make_unique<llvm::Module>("onnxc_model_name", context);
  stub->setTargetTriple(module.getTargetTriple());
  stub->setDataLayout(module.getDataLayout());
  llvm::Constant *text = llvm::ConstantDataArray::getString(context, name);
  auto *nameDefinition =
      new llvm::GlobalVariable(*stub, text->getType(), /*isConstant=*/true,
                               llvm::GlobalValue::ExternalLinkage, text, ModelNameSymbol);
  nameDefinition->setAlignment(llvm::Align(1));
  nameDefinition->setVisibility(llvm::GlobalValue::HiddenVisibility);
  auto *descriptorDeclaration =
      new llvm::GlobalVariable(*stub, descriptor->getValueType(), /*isConstant=*/true,
                               llvm::GlobalValue::ExternalLinkage, nullptr, DescriptorSymbol);
  descriptorDeclaration->setVisibility(llvm::GlobalValue::HiddenVisibility);
  llvm::Function *stubAccessor =
      llvm::Function::Create(accessorType, llvm::GlobalValue::ExternalLinkage, accessor, *stub);
  stubAccessor->setDoesNotThrow();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", stubAccessor));
  b.CreateRet(descriptorDeclaration);
  return stub;
}

} // namespace onnxc
