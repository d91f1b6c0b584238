//===- tests/unit/codegen/CompileCacheTest.cpp - Object code kept between compiles -===//
//
// CompileCache (codegen/artifact/CompileCache.h): an entry reads back as
// stored and an altered or truncated one is a miss; the folder it makes is
// its owner's alone; keys follow the module,
// the target machine and the kind, and nothing else; a folder that cannot
// be written stores nothing and fails nothing. splitModelName
// (ModelNameStub.h): the same model under two names keys the same, its stub
// holds the name and the accessor, and the JIT of the split model runs.
//
//===----------------------------------------------------------------------===//
#include "CodegenAotTestSupport.h"

#include "codegen/ModelJit.h"
#include "codegen/TargetSelection.h"
#include "codegen/artifact/CompileCache.h"
#include "codegen/artifact/ModelNameStub.h"
#include "ir/Error.h"

#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Target/TargetMachine.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace onnxc;
using namespace onnxc::aottest;

namespace {

class CompileCacheTest : public testing::Test {
protected:
  void SetUp() override {
    folder_ = testing::TempDir() + "onnxc_compile_cache_" +
              testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(folder_);
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  /// The one entry file of the folder.
  std::string onlyEntry() const {
    std::string found;
    for (const auto &entry : std::filesystem::directory_iterator(folder_))
      if (entry.path().filename().string().rfind("llvmcache-onnxc-", 0) == 0) {
        EXPECT_TRUE(found.empty()) << "more than one entry";
        found = entry.path().string();
      }
    return found;
  }

  std::string folder_;
};

std::string keyOf(const TinyModel &model, const TargetSelection &target, const char *kind) {
  std::unique_ptr<llvm::TargetMachine> machine = target.createTargetMachine();
  return CompileCache::key(*model.module, *machine, kind);
}

} // namespace

TEST_F(CompileCacheTest, EntriesReadBackWholeOrNotAtAll) {
  CompileCache cache(folder_);
  const std::string key(64, 'a'), object = "\x7f"
                                           "ELF and some machine code";
  EXPECT_EQ(cache.find(key), nullptr);
  ASSERT_TRUE(cache.store(key, object));
  // Its objects run in the next compile: the folder it made is its owner's alone.
  EXPECT_EQ(std::filesystem::status(folder_).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
  std::unique_ptr<llvm::MemoryBuffer> hit = cache.find(key);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->getBuffer().str(), object);

  // One byte of the object changed: its digest no longer matches.
  const std::string path = onlyEntry();
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string altered = bytes;
  altered.back() ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << altered;
  EXPECT_EQ(cache.find(key), nullptr);
  // Cut short, and empty.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 3);
  EXPECT_EQ(cache.find(key), nullptr);
  std::ofstream(path, std::ios::binary | std::ios::trunc);
  EXPECT_EQ(cache.find(key), nullptr);
  // Stored again, it is whole again.
  ASSERT_TRUE(cache.store(key, object));
  ASSERT_NE(cache.find(key), nullptr);
}

TEST_F(CompileCacheTest, AFolderThatCannotBeWrittenStoresNothing) {
  std::filesystem::create_directories(folder_);
  const std::string file = folder_ + "/a-file";
  std::ofstream(file) << "not a folder";
  CompileCache cache(file + "/cache");
  EXPECT_FALSE(cache.store(std::string(64, 'b'), "object"));
  EXPECT_EQ(cache.find(std::string(64, 'b')), nullptr);
}

TEST_F(CompileCacheTest, KeysFollowTheModuleTheMachineAndTheKind) {
  const TargetSelection host = TargetSelection::select();
  const TargetSelection generic = TargetSelection::select({"x86-64", ""});
  const std::string a = keyOf(buildTinyModel(host), host, "object");
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(keyOf(buildTinyModel(host), host, "object"), a);
  EXPECT_NE(keyOf(buildTinyModel(host), host, "jit"), a);
  EXPECT_NE(keyOf(buildTinyModel(generic), generic, "object"), a);
  // One more step: other code.
  TinyModel longer = buildTinyModel(
      host, "tiny", [](ModelPlan &plan) { plan.steps.push_back(plan.steps.back()); });
  EXPECT_NE(keyOf(longer, host, "object"), a);
}

TEST_F(CompileCacheTest, AModelUnderAnotherNameKeysTheSame) {
  const TargetSelection host = TargetSelection::select();
  TinyModel first = buildTinyModel(host, "first"), second = buildTinyModel(host, "second");
  EXPECT_NE(keyOf(first, host, "object"), keyOf(second, host, "object"));
  std::unique_ptr<llvm::Module> firstStub = splitModelName(*first.module, first.accessor);
  std::unique_ptr<llvm::Module> secondStub = splitModelName(*second.module, second.accessor);
  EXPECT_EQ(keyOf(first, host, "object"), keyOf(second, host, "object"));
  EXPECT_EQ(first.module->getFunction(first.accessor), nullptr);
  EXPECT_NE(firstStub->getFunction(first.accessor), nullptr);
  EXPECT_NE(secondStub->getFunction(second.accessor), nullptr);
  EXPECT_NE(firstStub->getGlobalVariable(ModelNameSymbol), nullptr);
  // A module without a descriptor has no name to move.
  EXPECT_THROW(splitModelName(*first.module, first.accessor), Error);
}

TEST_F(CompileCacheTest, TheJitOfACachedModelRunsAsCompiled) {
  const TargetSelection host = TargetSelection::select();
  setenv("ONNXC_CACHE_DIR", folder_.c_str(), 1);
  std::vector<std::vector<float>> results;
  for (const char *name : {"one", "two"}) {
    TinyModel model = buildTinyModel(host, name);
    std::unique_ptr<JitModel> jit =
        compileModelJit(std::move(model.module), std::move(model.context), host, model.accessor);
    EXPECT_STREQ(jit->descriptor()->model_name, name);
    results.push_back(runByHand(*jit->descriptor(), {1, 2, 3, 4, 5, 6, 7, 8}, 2));
  }
  unsetenv("ONNXC_CACHE_DIR");
  EXPECT_EQ(results[0], results[1]);
  // The model's code once; the names' stubs are not cached.
  int entries = 0;
  for (const auto &entry : std::filesystem::directory_iterator(folder_))
    entries += entry.path().filename().string().rfind("llvmcache-onnxc-", 0) == 0;
  EXPECT_EQ(entries, 1);
}
