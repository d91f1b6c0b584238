//===- tests/unit/runtime/RuntimeErrorsTest.cpp - Every way a session refuses -------===//
#include "RuntimeTestModel.h"
#include "onnxc/model_info.h"
#include "runtime/CpuFeatures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

using namespace onnxc::runtime::testing;

namespace {

struct SessionDeleter {
  void operator()(onnxc_session *session) const { onnxc_session_destroy(session); }
};
using SessionPtr = std::unique_ptr<onnxc_session, SessionDeleter>;

/// The message a run of `inputs` fails with, or "" if it succeeds.
std::string runError(onnxc_session *session, std::vector<onnxc_tensor> inputs,
                     onnxc_tensor *outputs = nullptr, int32_t numOutputs = 2) {
  onnxc_tensor libraryOwned[2] = {};
  if (!outputs)
    outputs = libraryOwned;
  if (onnxc_session_run(session, inputs.data(), int32_t(inputs.size()), outputs, numOutputs) == 0)
    return "";
  return onnxc_session_error(session);
}

/// The message session creation fails with, or "" if it succeeds.
std::string createError(TestModel &model, int threads = 1) {
  SessionPtr session(onnxc_session_create(model.descriptor(), threads));
  return session ? "" : onnxc_last_error();
}

class RuntimeRunErrors : public ::testing::Test {
protected:
  void SetUp() override { session_.reset(onnxc_session_create(model_.descriptor(), 2)); }

  TestModel model_;
  SessionPtr session_;
  TestCase test_{2, 7};
};

} // namespace

TEST_F(RuntimeRunErrors, WrongDtype) {
  auto inputs = test_.inputs();
  inputs[2].dtype = ONNXC_I32;
  EXPECT_EQ(runError(session_.get(), inputs), "input 'mask': dtype is i32 but the model needs i64");
}

TEST_F(RuntimeRunErrors, WrongRank) {
  auto inputs = test_.inputs();
  inputs[0].rank = 2;
  EXPECT_EQ(runError(session_.get(), inputs),
            "input 'x': rank is 2 but the model needs 3 [batch, seq, 4]");
}

TEST_F(RuntimeRunErrors, DimBoundByAnotherInput) {
  auto inputs = test_.inputs();
  inputs[2].dims[1] = 9;
  EXPECT_EQ(runError(session_.get(), inputs),
            "input 'mask': dim 1 is 9 but the model needs seq = 7 (bound by input 'x')");
}

TEST_F(RuntimeRunErrors, ConstantDim) {
  auto inputs = test_.inputs();
  inputs[1].dims[0] = 5;
  EXPECT_EQ(runError(session_.get(), inputs), "input 'c': dim 0 is 5 but the model needs 4");
}

TEST_F(RuntimeRunErrors, NegativeDimAndMissingData) {
  auto inputs = test_.inputs();
  inputs[2].dims[0] = -1;
  EXPECT_EQ(runError(session_.get(), inputs), "input 'mask': dim 0 is -1; dims must be >= 0");
  inputs = test_.inputs();
  inputs[0].data = nullptr;
  EXPECT_EQ(runError(session_.get(), inputs),
            "input 'x': data is NULL (every input needs its values)");
}

TEST_F(RuntimeRunErrors, WrongCounts) {
  auto inputs = test_.inputs();
  inputs.pop_back();
  EXPECT_EQ(runError(session_.get(), inputs),
            "the model takes 3 inputs ('x', 'c', 'mask') but 2 were given: 'mask' is missing");
  inputs.pop_back();
  EXPECT_EQ(runError(session_.get(), inputs),
            "the model takes 3 inputs ('x', 'c', 'mask') but 1 was given: 'c', 'mask' are missing");
  EXPECT_EQ(runError(session_.get(), {}),
            "the model takes 3 inputs ('x', 'c', 'mask') but 0 were given: 'x', 'c', 'mask' are "
            "missing");
  EXPECT_EQ(runError(session_.get(), test_.inputs(), nullptr, 1),
            "the model has 2 outputs but 1 were given");
}

TEST_F(RuntimeRunErrors, InputSmallerThanItsDims) {
  auto inputs = test_.inputs();
  // 2 x 7 x 4 floats are 224 bytes; a caller that says it passes fewer would
  // have the kernels read past its buffer.
  inputs[0].size_bytes = 220;
  EXPECT_EQ(runError(session_.get(), inputs),
            "input 'x': size_bytes is 220 but f32 [2, 7, 4] needs 224");
  inputs[0].size_bytes = 224;
  EXPECT_EQ(runError(session_.get(), inputs), "");
  inputs[0].size_bytes = 4096;
  EXPECT_EQ(runError(session_.get(), inputs), "");
}

TEST_F(RuntimeRunErrors, OutputBufferTooSmall) {
  std::vector<float> z(10);
  onnxc_tensor outputs[2] = {};
  outputs[0].data = z.data();
  outputs[0].size_bytes = z.size() * sizeof(float);
  EXPECT_EQ(runError(session_.get(), test_.inputs(), outputs),
            "output 'z': the buffer holds 40 bytes but the model needs 224");
  // A failed run leaves the caller's tensors alone.
  EXPECT_EQ(outputs[1].data, nullptr);
  EXPECT_EQ(outputs[0].rank, 0);
}

TEST_F(RuntimeRunErrors, SizeOverflow) {
  auto inputs = test_.inputs();
  int64_t huge = int64_t(1) << 32;
  inputs[0].dims[0] = inputs[0].dims[1] = huge;
  inputs[2].dims[0] = inputs[2].dims[1] = huge;
  EXPECT_EQ(runError(session_.get(), inputs),
            "the size of input 'x' overflows for batch = 4294967296, seq = 4294967296");
}

TEST_F(RuntimeRunErrors, ExpressionDimsNameTheirSymbols) {
  const int64_t twoSeq[] = {1, 2, 1, 1};
  const int64_t batchTimesSeq[] = {1, 1, 2, 0, 1};
  model_.inputDims[2] = {batchTimesSeq, twoSeq};
  SessionPtr session(onnxc_session_create(model_.descriptor(), 1));
  ASSERT_TRUE(session) << onnxc_last_error();
  auto inputs = test_.inputs();
  EXPECT_EQ(runError(session.get(), inputs),
            "input 'mask': dim 0 is 2 but the model needs batch*seq = 14 (batch = 2 bound by "
            "input 'x', seq = 7 bound by input 'x')");
  inputs[2].dims[0] = 14;
  EXPECT_EQ(runError(session.get(), inputs),
            "input 'mask': dim 1 is 7 but the model needs 2*seq = 14 (seq = 7 bound by input "
            "'x')");
}

TEST_F(RuntimeRunErrors, SameInputBindingIsNamed) {
  // A square input: n comes from axis 0 and axis 1 must agree.
  model_.symbolSources[1] = {2, 0};
  model_.inputDims[2] = {kSeqExpr, kSeqExpr};
  SessionPtr session(onnxc_session_create(model_.descriptor(), 1));
  ASSERT_TRUE(session) << onnxc_last_error();
  auto inputs = test_.inputs();
  inputs[2].dims[0] = 7;
  inputs[2].dims[1] = 6;
  EXPECT_EQ(runError(session.get(), inputs),
            "input 'mask': dim 1 is 6 but the model needs seq = 7 (bound by dim 0 of this input)");
}

TEST_F(RuntimeRunErrors, SessionRecoversAfterAnError) {
  auto bad = test_.inputs();
  bad[2].dims[1] = 9;
  EXPECT_NE(runError(session_.get(), bad), "");
  EXPECT_EQ(runError(session_.get(), test_.inputs()), "");
  EXPECT_STREQ(onnxc_session_error(session_.get()), "");
}

// Shape inference's assumptions (model_abi.h onnxc_assumption) are checked
// when the inputs are bound: here that 2*seq - batch >= 0.
TEST_F(RuntimeRunErrors, BrokenAssumptionFailsTheRunWithItsMessage) {
  static const int64_t kTwoSeqMinusBatch[] = {2, 2, 1, 1, -1, 1, 0};
  model_.assumptions = {{kTwoSeqMinusBatch, ONNXC_ASSUME_NONNEGATIVE, "node 'n': 2*seq >= batch"}};
  SessionPtr session(onnxc_session_create(model_.descriptor(), 1));
  ASSERT_TRUE(session) << onnxc_last_error();
  EXPECT_EQ(runError(session.get(), TestCase(2, 3).inputs()), "");
  EXPECT_EQ(runError(session.get(), TestCase(7, 3).inputs()),
            "node 'n': 2*seq >= batch; the inputs give seq = 3, batch = 7");
}

TEST(RuntimeCreateErrors, MalformedAssumptionsAreRefused) {
  static const int64_t kBadSymbol[] = {1, 1, 1, 5};
  TestModel model;
  model.assumptions = {{kBatchExpr, 7, "kind 7"}};
  EXPECT_EQ(createError(model), "model 'relu_scale': assumption 0 has an invalid kind 7");
  model.assumptions = {{kBatchExpr, ONNXC_ASSUME_ZERO, nullptr}};
  EXPECT_EQ(createError(model), "model 'relu_scale': assumption 0 has no message");
  model.assumptions = {{kBadSymbol, ONNXC_ASSUME_ZERO, "m"}};
  EXPECT_EQ(createError(model),
            "model 'relu_scale': assumption 0 ('m') has a malformed expression");
}

TEST(RuntimeCreateErrors, AbiMismatch) {
  TestModel model;
  model.abiVersion = ONNXC_ABI_VERSION - 1;
  EXPECT_EQ(createError(model), "model was compiled for ABI v" +
                                    std::to_string(ONNXC_ABI_VERSION - 1) + ", this runtime is v" +
                                    std::to_string(ONNXC_ABI_VERSION));
}

TEST(RuntimeCreateErrors, CpuFeaturesTheCpuLacks) {
  // A feature no CPU reports: a .so built for a feature this runtime cannot
  // check is refused the same way.
  TestModel model;
  model.cpuFeatures = "no-such-feature";
  EXPECT_EQ(createError(model),
            "model 'relu_scale' needs no-such-feature, which this CPU lacks (compile it for this "
            "CPU: --mcpu=native; or for every machine it may run on, e.g. --mcpu=x86-64-v3 for "
            "AVX2 ones)");
  model.cpuFeatures = "amx-fp16,no-such-feature";
  EXPECT_NE(createError(model).find("needs amx-fp16, no-such-feature, which this CPU lacks (or "
                                    "its operating system has not enabled them) (compile it for "
                                    "this CPU: --mcpu=native, --precision=f32;"),
            std::string::npos)
      << createError(model);
  model.cpuFeatures = "";
  EXPECT_EQ(createError(model), "");
}

TEST(RuntimeCreateErrors, HiddenCpuFeaturesAreMissing) {
  // $ONNXC_HIDE_CPU_FEATURES stands in for an older CPU: every feature this
  // one has, hidden, is refused by name, and only those hidden.
  std::string present;
  for (const char *feature : {"sse3", "ssse3", "sse4.1", "sse4.2", "popcnt"})
    if (onnxc::runtime::checkCpuFeatures(feature).empty())
      present += (present.empty() ? "" : ",") + std::string(feature);
  if (present.empty())
    GTEST_SKIP() << "this CPU has none of the SSE features";
  TestModel model;
  model.cpuFeatures = present.c_str();
  EXPECT_EQ(createError(model), "");
  std::string first = present.substr(0, present.find(','));
  setenv("ONNXC_HIDE_CPU_FEATURES", ("avx512f," + first).c_str(), 1);
  std::string error = createError(model);
  const char *checked = onnxc_model_check_cpu(model.descriptor());
  unsetenv("ONNXC_HIDE_CPU_FEATURES");
  EXPECT_EQ(error.find("model 'relu_scale' needs " + first + ", which this CPU lacks"), 0u)
      << error;
  ASSERT_NE(checked, nullptr);
  EXPECT_EQ(std::string(checked), error);
  EXPECT_EQ(onnxc_model_check_cpu(model.descriptor()), nullptr);
}

TEST(RuntimeCreateErrors, EveryCheckableFeatureIsKnown) {
  // What codegen records (onnxc_cpu_features_checked) the check must know:
  // an unknown name would refuse every CPU.
  std::string list = onnxc_cpu_features_checked();
  EXPECT_NE(list.find("avx2"), std::string::npos);
  EXPECT_NE(list.find("avx512f"), std::string::npos);
  EXPECT_NE(list.find("amx-tile"), std::string::npos);
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = std::min(list.find(',', start), list.size());
    std::string name = list.substr(start, comma - start);
    std::string problem = onnxc::runtime::checkCpuFeatures(name.c_str());
    EXPECT_TRUE(problem.empty() || problem == "this CPU lacks " + name ||
                problem ==
                    "this CPU lacks " + name + " (or its operating system has not enabled it)" ||
                problem.find("AMX tile state") != std::string::npos)
        << name << ": " << problem;
    start = comma + 1;
  }
}

TEST(RuntimeCreateErrors, NullDescriptorAndNegativeThreads) {
  EXPECT_EQ(onnxc_session_create(nullptr, 1), nullptr);
  EXPECT_STREQ(onnxc_last_error(), "the model descriptor is NULL");
  TestModel model;
  EXPECT_EQ(createError(model, -1), "num_threads is -1; use 0 for one per core");
  EXPECT_EQ(createError(model, 0), "");
}

TEST(RuntimeCreateErrors, BadSymbolSources) {
  TestModel model;
  model.symbolSources[1] = {3, 1};
  EXPECT_EQ(createError(model),
            "model 'relu_scale': symbol 'seq' is read from input 3, but the model has 3 inputs");
  model.symbolSources[1] = {1, 1};
  EXPECT_EQ(createError(model), "model 'relu_scale': symbol 'seq' is read from axis 1 of input "
                                "'c', which has rank 1");
  model.symbolSources[1] = {0, 2};
  EXPECT_EQ(createError(model), "model 'relu_scale': symbol 'seq' is read from input 'x' dim 2, "
                                "which is 4, not the symbol itself");
}

TEST(RuntimeCreateErrors, BadCachePairs) {
  // x [batch, seq, 4] -> z [batch, seq, 4] as a pair along seq, with the
  // capacity symbols the runtime binds (source -1, -1).
  auto withPair = [](onnxc_cache_pair pair) {
    TestModel model;
    model.symbolNames.insert(model.symbolNames.end(), {"cap", "cap_past"});
    model.symbolSources.insert(model.symbolSources.end(), {{-1, -1}, {-1, -1}});
    model.cachePairs = {pair};
    return createError(model);
  };
  EXPECT_EQ(withPair({0, 0, 1, 2, 3}), "");
  EXPECT_EQ(withPair({5, 0, 1, 2, 3}),
            "model 'relu_scale': cache pair 0 names input 5, but the model has 3 inputs");
  EXPECT_EQ(withPair({0, 9, 1, 2, 3}),
            "model 'relu_scale': cache pair 0 names output 9, but the model has 2 outputs");
  EXPECT_EQ(withPair({0, 0, 3, 2, 3}),
            "model 'relu_scale': cache pair 0 ('x' -> 'z') has axis 3 for rank 3");
  // A constant length is a fixed-length cache (opset 24's TensorScatter).
  EXPECT_EQ(withPair({0, 0, 2, 2, 3}), "");
  EXPECT_EQ(withPair({0, 0, 1, 2, 7}),
            "model 'relu_scale': symbol 'cap_past' is read from input -1, but the model has 3 "
            "inputs");
  EXPECT_EQ(withPair({0, 0, 1, 3, 1}),
            "model 'relu_scale': symbol 'cap' is read from input -1, but the model has 3 inputs");
  {
    TestModel model;
    model.symbolNames.insert(model.symbolNames.end(), {"cap", "cap_past"});
    model.symbolSources.insert(model.symbolSources.end(), {{-1, -1}, {-1, -1}});
    model.cachePairs = {{0, 0, 1, 2, 3}, {0, 0, 1, 2, 9}};
    EXPECT_EQ(createError(model), "model 'relu_scale': cache pair 1 ('x' -> 'z') has capacity "
                                  "symbol 9, but the model has 4 symbols");
  }
  TestModel noTable;
  noTable.symbolNames.insert(noTable.symbolNames.end(), {"cap", "cap_past"});
  noTable.symbolSources.insert(noTable.symbolSources.end(), {{-1, -1}, {-1, -1}});
  noTable.cachePairs = {{0, 0, 1, 2, 3}};
  noTable.descriptor();
  noTable.model.cache_pairs = nullptr;
  EXPECT_EQ(onnxc_session_create(&noTable.model, 1), nullptr);
  EXPECT_STREQ(onnxc_last_error(),
               "model 'relu_scale': the cache pair table is missing or has a negative count");
}

TEST(RuntimeCreateErrors, BadTensorInfos) {
  TestModel model;
  model.inputs[1].dtype = 99;
  EXPECT_EQ(createError(model), "model 'relu_scale': input 'c' has unknown dtype 99");
  model = TestModel();
  model.outputs[0].rank = 9;
  EXPECT_EQ(createError(model),
            "model 'relu_scale': output 'z' has rank 9; the runtime supports 0..8");
  model = TestModel();
  const int64_t unknownSymbol[] = {1, 1, 1, 5};
  model.inputDims[0][2] = unknownSymbol;
  EXPECT_EQ(createError(model), "model 'relu_scale': input 'x' dim 2 is a malformed expression");
}

TEST(RuntimeCreateErrors, BadBuffersAndSteps) {
  TestModel model;
  model.stepBuffers[2][1] = 42;
  EXPECT_EQ(createError(model),
            "model 'relu_scale': step 2 ('scale') uses buffer 42, but the model has 9");
  model = TestModel();
  model.buffers[TestModel::T].first_step = 3;
  EXPECT_EQ(createError(model), "model 'relu_scale': step 2 ('scale') uses buffer 8 outside its "
                                "lifetime [3, 3]");
  model = TestModel();
  model.buffers[TestModel::T].last_step = 5;
  EXPECT_EQ(createError(model), "model 'relu_scale': buffer 8 has lifetime [2, 5], outside the "
                                "model's 5 steps");
  model = TestModel();
  model.buffers[TestModel::S].index = 0;
  EXPECT_EQ(createError(model),
            "model 'relu_scale': output 'z' has 2 buffers; it needs exactly one");
  model = TestModel();
  model.buffers[TestModel::D].constant_data = nullptr;
  EXPECT_EQ(createError(model), "model 'relu_scale': buffer 5 is a constant without data");
  model = TestModel();
  model.steps[4].kernel = nullptr;
  EXPECT_EQ(createError(model), "model 'relu_scale': step 4 ('rowsum') has no kernel");
}

TEST(RuntimeCreateErrors, LastErrorIsPerThread) {
  TestModel bad;
  bad.abiVersion = ONNXC_ABI_VERSION + 1;
  std::string expected = "model was compiled for ABI v" + std::to_string(ONNXC_ABI_VERSION + 1) +
                         ", this runtime is v" + std::to_string(ONNXC_ABI_VERSION);
  EXPECT_EQ(createError(bad), expected);
  std::string otherThreadError = "unset";
  std::thread([&] { otherThreadError = onnxc_last_error(); }).join();
  EXPECT_EQ(otherThreadError, "");
  EXPECT_EQ(onnxc_last_error(), expected);
}
