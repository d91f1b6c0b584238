//===- tests/unit/codegen/WeightsObjectTest.cpp - weights written as an ELF object ---===//
#include "CodegenAotTestSupport.h"

#include "codegen/artifact/ObjectEmitter.h"
#include "codegen/artifact/SharedLibraryLinker.h"
#include "codegen/artifact/WeightsObject.h"
#include "ir/Error.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <map>
#include <optional>

using namespace onnxc;
using namespace onnxc::aottest;

namespace {

struct ReadSymbol {
  uint64_t address = 0, size = 0;
  uint8_t other = 0;
  std::string bytes;
};

/// The symbols of the object at `path` as LLVM's own ELF reader sees them;
/// `section` gets the data section's name, flags and alignment.
std::map<std::string, ReadSymbol> readObject(const std::string &path,
                                             std::optional<llvm::object::ELFSectionRef> &section,
                                             std::unique_ptr<llvm::MemoryBuffer> &file,
                                             std::unique_ptr<llvm::object::ObjectFile> &object) {
  file = std::move(*llvm::MemoryBuffer::getFile(path));
  auto parsed = llvm::object::ObjectFile::createObjectFile(file->getMemBufferRef());
  std::map<std::string, ReadSymbol> symbols;
  if (!parsed) {
    ADD_FAILURE() << llvm::toString(parsed.takeError());
    return symbols;
  }
  object = std::move(*parsed);
  for (llvm::object::ELFSymbolRef symbol :
       llvm::cast<llvm::object::ELFObjectFileBase>(*object).symbols()) {
    llvm::object::section_iterator in = llvm::cantFail(symbol.getSection());
    if (in == object->section_end())
      continue; // the null symbol
    llvm::StringRef contents = llvm::cantFail(in->getContents());
    ReadSymbol read{llvm::cantFail(symbol.getAddress()), symbol.getSize(), symbol.getOther(), {}};
    read.bytes = contents.substr(read.address, read.size).str();
    symbols[llvm::cantFail(symbol.getName()).str()] = read;
    section.emplace(*in);
  }
  return symbols;
}

} // namespace

TEST(WeightsObject, LlvmReadsEverySymbolAlignedHiddenWithItsBytes) {
  ScratchDir dir("onnxc-weights");
  std::string a = "abcde", b(130, 'x'), c = "z";
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = char(i * 7);
  auto bytes = [](const std::string &s) { return reinterpret_cast<const uint8_t *>(s.data()); };
  std::string path = dir / "w.o";
  writeWeightsObject(
      path, llvm::Triple("x86_64-pc-linux-gnu"),
      {{"w.a", bytes(a), a.size()}, {"w.b", bytes(b), b.size()}, {"w.c", bytes(c), c.size()}});
  std::optional<llvm::object::ELFSectionRef> section;
  std::unique_ptr<llvm::MemoryBuffer> file;
  std::unique_ptr<llvm::object::ObjectFile> object;
  std::map<std::string, ReadSymbol> symbols = readObject(path, section, file, object);
  ASSERT_TRUE(section.has_value());
  ASSERT_EQ(symbols.size(), 3u);
  EXPECT_EQ(llvm::cantFail(section->getName()), ".lrodata");
  EXPECT_EQ(section->getFlags(), uint64_t(llvm::ELF::SHF_ALLOC | llvm::ELF::SHF_X86_64_LARGE));
  EXPECT_EQ(section->getAlignment().value(), 64u);
  const std::pair<const char *, const std::string *> expected[] = {
      {"w.a", &a}, {"w.b", &b}, {"w.c", &c}};
  uint64_t address = 0;
  for (auto [name, content] : expected) {
    const ReadSymbol &symbol = symbols[name];
    EXPECT_EQ(symbol.address, address) << name; // 0, 64, 256: each at a 64-byte boundary
    EXPECT_EQ(symbol.size, content->size()) << name;
    EXPECT_EQ(symbol.other, llvm::ELF::STV_HIDDEN) << name;
    EXPECT_EQ(symbol.bytes, *content) << name;
    address = (address + content->size() + 63) / 64 * 64;
  }
}

TEST(WeightsObject, LibraryLinkedWithItComputesAndExportsNoWeights) {
  ScratchDir dir("onnxc-weights");
  TargetSelection target = TargetSelection::select();
  for (Linker linker : {Linker::InProcessLld, Linker::CompilerDriver}) {
    std::string name = linker == Linker::InProcessLld ? "tiny_lld" : "tiny_driver";
    TinyModel model = buildTinyModel(target, name, {}, ConstantPlacement::External);
    std::string object = dir / (name + ".o"), weights = dir / (name + ".weights.o");
    std::string library = dir / (name + ".so");
    const ConstantBytes &constant = model.plan.buffers[2].constant;
    writeWeightsObject(weights, target.triple(),
                       {{externalConstantName(2), constant.data, constant.size}});
    emitModule(*model.module, target, EmitKind::Object, object);
    std::string driver = linker == Linker::CompilerDriver ? findCompilerDriver() : "";
    try {
      linkSharedLibrary({object, library, {model.accessor}, "", driver, {weights}});
    } catch (const Error &error) {
      // No lld in this build (the driver fallback is tested then).
      ASSERT_EQ(linker, Linker::InProcessLld) << error.what();
      continue;
    }
    void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << dlerror();
    using Accessor = const onnxc_model_descriptor *(*)();
    auto accessor = reinterpret_cast<Accessor>(dlsym(handle, ("onnxc_model_" + name).c_str()));
    ASSERT_NE(accessor, nullptr) << name;
    expectTinyDescriptor(*accessor(), name.c_str());
    std::vector<float> x = sampleInput(3);
    EXPECT_EQ(runByHand(*accessor(), x, 3), expectedOutput(x)) << name;
    EXPECT_EQ(dlsym(handle, externalConstantName(2).c_str()), nullptr) << name;
    dlclose(handle);
  }
}

TEST(WeightsObject, UnwritablePathIsNamed) {
  uint8_t byte = 1;
  try {
    writeWeightsObject("/nonexistent-dir/w.o", llvm::Triple("x86_64-pc-linux-gnu"),
                       {{"w", &byte, 1}});
    FAIL() << "no error";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("cannot write '/nonexistent-dir/w.o'"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW(writeWeightsObject("/tmp/w.o", llvm::Triple("riscv64-unknown-linux-gnu"), {}),
               Error);
}
