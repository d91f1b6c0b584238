//===- tests/unit/lower/LowerReductionTest.cpp - Reduce*, Arg*, CumSum, norms ----===//
//
// Every case compiles a one-node graph through lowering + JIT + runtime and
// compares with the reference evaluator: every axis subset of a 4-D tensor,
// keepdims both ways, symbolic dims, the row lengths around the vector
// width (1, 7, 8, 33, 384), every dtype family, NaN and empty reductions.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "ir/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

namespace onnxc {
namespace {

using lowertest::expectCompiledMatchesReference;
using lowertest::lowerOnly;
using lowertest::parseGraph;
using lowertest::randomOf;

using Dims = std::vector<std::string>;

std::string join(const std::vector<std::string> &parts) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i)
    text += (i ? ", " : "") + parts[i];
  return text;
}

std::string type(DType dtype, const Dims &dims) {
  return std::string(dtypeName(dtype)) + "[" + join(dims) + "]";
}

std::string intList(const std::vector<int64_t> &values) {
  std::vector<std::string> parts;
  for (int64_t v : values)
    parts.push_back(std::to_string(v));
  return "[" + join(parts) + "]";
}

/// A one-node graph `%y = op(%x[, const %axes]) {attrs}` with `%y` of
/// `resultType`.
std::string unaryGraph(const std::string &op, const std::string &inputType,
                       const std::string &resultType, const std::string &attrs,
                       const std::vector<int64_t> *axes = nullptr) {
  std::string text = "graph @g(%x: " + inputType + ") -> (%y: " + resultType + ") {\n";
  std::string operands = "%x";
  if (axes) {
    text += "  const %axes: i64[" + std::to_string(axes->size()) + "] = dense<" + intList(*axes) +
            ">\n";
    operands += ", %axes";
  }
  text += "  %y = " + op + "(" + operands + ") {" + attrs + "} : " + resultType + "\n";
  return text + "  return %y\n}\n";
}

/// Reduce* over `axes` (all when empty) with its result type.
std::string reduceGraph(const std::string &op, DType dtype, const Dims &dims,
                        const std::vector<int64_t> &axes, bool keepDims) {
  std::set<int64_t> reduced(axes.begin(), axes.end());
  Dims resultDims;
  for (size_t i = 0; i < dims.size(); ++i) {
    bool isReduced = axes.empty() || reduced.count(int64_t(i)) ||
                     reduced.count(int64_t(i) - int64_t(dims.size()));
    if (!isReduced)
      resultDims.push_back(dims[i]);
    else if (keepDims)
      resultDims.push_back("1");
  }
  std::string attrs = "keepdims = " + std::to_string(int(keepDims));
  return unaryGraph(op, type(dtype, dims), type(dtype, resultDims), attrs,
                    axes.empty() ? nullptr : &axes);
}

void expectReduce(const std::string &op, DType dtype, const Dims &dims,
                  const std::vector<int64_t> &axes, bool keepDims,
                  const std::vector<int64_t> &inputDims, double lo = -1, double hi = 1,
                  double rtol = 1e-4, int threads = 1) {
  SCOPED_TRACE(op + " " + type(dtype, dims) + " axes " + intList(axes) + " keepdims " +
               std::to_string(keepDims) + " input " + intList(inputDims));
  auto graph = parseGraph(reduceGraph(op, dtype, dims, axes, keepDims));
  expectCompiledMatchesReference(*graph, {{"x", randomOf(dtype, inputDims, 7, lo, hi)}}, rtol, 1e-6,
                                 threads);
}

const std::vector<std::string> kReduceOps = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                             "ReduceProd"};

std::vector<int64_t> axesOfMask(unsigned mask) {
  std::vector<int64_t> axes;
  for (int64_t a = 0; a < 4; ++a)
    if (mask & (1u << a))
      axes.push_back(a);
  return axes;
}

TEST(LowerReduction, EveryAxisSubsetOf4D) {
  for (const std::string &op : kReduceOps)
    for (unsigned mask = 0; mask < 16; ++mask)
      for (bool keepDims : {true, false}) {
        double lo = op == "ReduceProd" ? 0.9 : -1, hi = op == "ReduceProd" ? 1.1 : 1;
        expectReduce(op, DType::F32, {"3", "4", "5", "37"}, axesOfMask(mask), keepDims,
                     {3, 4, 5, 37}, lo, hi);
      }
}

TEST(LowerReduction, EveryAxisSubsetWithSymbolicDims) {
  for (std::string op : {"ReduceSum", "ReduceMax"})
    for (unsigned mask = 0; mask < 16; ++mask)
      for (bool keepDims : {true, false})
        for (std::vector<int64_t> input : {std::vector<int64_t>{3, 4, 5, 37}, {1, 4, 1, 9}})
          expectReduce(op, DType::F32, {"a", "4", "c", "d"}, axesOfMask(mask), keepDims, input);
}

TEST(LowerReduction, NegativeAxesAndNoopWithEmptyAxes) {
  expectReduce("ReduceSum", DType::F32, {"3", "8", "5"}, {-1, -3}, false, {3, 8, 5});
  auto noop = parseGraph(
      unaryGraph("ReduceSum", "f32[n, 4]", "f32[n, 4]", "keepdims = 0, noop_with_empty_axes = 1"));
  expectCompiledMatchesReference(*noop, {{"x", randomOf(DType::F32, {3, 4}, 1)}});
}

TEST(LowerReduction, RowLengthsAroundTheVectorWidth) {
  for (int64_t length : {1, 7, 8, 33, 384}) {
    std::string l = std::to_string(length);
    for (std::string op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
      expectReduce(op, DType::F32, {"6", l}, {1}, true, {6, length});    // contiguous rows
      expectReduce(op, DType::F32, {"n", "m"}, {1}, false, {6, length}); // length at run time
      expectReduce(op, DType::F32, {l, "40"}, {0}, false, {length, 40}); // columns
      expectReduce(op, DType::F32, {"3", l, "33"}, {1}, true, {3, length, 33});
      expectReduce(op, DType::F32, {"n", "m"}, {0}, true, {length, 9}); // symbolic columns
    }
  }
}

TEST(LowerReduction, LongFloatSumsStayCloseToTheDoubleReference) {
  expectReduce("ReduceSum", DType::F32, {"2", "n"}, {1}, false, {2, 300007}, 0, 1, 1e-6);
  expectReduce("ReduceMean", DType::F32, {"n", "9"}, {0}, false, {200003, 9}, 0, 1, 1e-6);
  expectReduce("ReduceSum", DType::F32, {"n", "3", "7"}, {0, 2}, false, {30011, 3, 7}, 0, 1, 1e-6);
}

TEST(LowerReduction, SplitsAcrossThreads) {
  expectReduce("ReduceMean", DType::F32, {"n", "64"}, {1}, false, {4099, 64}, -1, 1, 1e-4, 2);
  expectReduce("ReduceMax", DType::F32, {"64", "n"}, {0}, false, {64, 4099}, -1, 1, 1e-4, 2);
  expectReduce("ReduceSum", DType::I32, {"n", "5", "64"}, {0, 2}, false, {300, 5, 64}, -50, 50, 0,
               2);
}

TEST(LowerReduction, IntegersAreExact) {
  for (DType dtype : {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32, DType::U32,
                      DType::I64, DType::U64})
    for (const std::string &op : kReduceOps)
      for (std::vector<int64_t> axes : {std::vector<int64_t>{1}, {0, 2}, {}}) {
        double lo = isSignedInt(dtype) ? -100 : 0;
        expectReduce(op, dtype, {"4", "6", "5"}, axes, false, {4, 6, 5}, lo, 100, 0);
      }
}

TEST(LowerReduction, BoolMaxMin) {
  for (std::string op : {"ReduceMax", "ReduceMin"})
    for (std::vector<int64_t> axes : {std::vector<int64_t>{1}, {0}, {}})
      expectReduce(op, DType::Bool, {"3", "4"}, axes, true, {3, 4});
}

TEST(LowerReduction, HalfBfloatAndDouble) {
  for (DType dtype : {DType::F16, DType::BF16, DType::F64})
    for (const std::string &op : kReduceOps)
      for (std::vector<int64_t> axes : {std::vector<int64_t>{1}, {0}}) {
        double lo = op == "ReduceProd" ? 0.9 : -1, hi = op == "ReduceProd" ? 1.1 : 1;
        expectReduce(op, dtype, {"12", "33"}, axes, true, {12, 33}, lo, hi,
                     dtype == DType::F64 ? 1e-12 : 1e-2);
      }
}

TEST(LowerReduction, NaNWinsMaxAndMin) {
  for (std::string op : {"ReduceMax", "ReduceMin", "ArgMax", "ArgMin"})
    for (Dims dims : {Dims{"5", "37"}, Dims{"37", "9"}, Dims{"5", "3"}}) {
      int64_t rows = std::stoll(dims[0]), columns = std::stoll(dims[1]);
      Tensor x = randomOf(DType::F32, {rows, columns}, 3);
      float *data = x.data<float>();
      data[columns + 2] = std::numeric_limits<float>::quiet_NaN();
      data[rows * columns - 1] = std::numeric_limits<float>::quiet_NaN();
      for (int64_t axis : {0, 1}) {
        std::string text =
            op.rfind("Arg", 0) == 0
                ? unaryGraph(op, type(DType::F32, dims),
                             axis == 0 ? "i64[1, " + dims[1] + "]" : "i64[" + dims[0] + ", 1]",
                             "axis = " + std::to_string(axis))
                : reduceGraph(op, DType::F32, dims, {axis}, true);
        expectCompiledMatchesReference(*parseGraph(text), {{"x", x}});
      }
    }
}

TEST(LowerReduction, EmptyReducedAxis) {
  for (std::string op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceProd"}) {
    expectReduce(op, DType::F32, {"0", "5"}, {0}, false, {0, 5});
    expectReduce(op, DType::F32, {"5", "n"}, {1}, true, {5, 0});
  }
  expectReduce("ReduceSum", DType::I32, {"n", "5"}, {0}, true, {0, 5});
  expectReduce("ReduceMean", DType::I32, {"n", "5"}, {0}, true, {0, 5});
}

TEST(LowerReduction, EmptyIntegerMaxMinAreTheTypesExtremes) {
  // ONNX: the lowest/highest value of the element type.
  for (std::string op : {"ReduceMax", "ReduceMin"}) {
    for (DType dtype : {DType::I32, DType::I8, DType::U8}) {
      auto graph = parseGraph(reduceGraph(op, dtype, {"n", "2"}, {0}, false));
      std::vector<Tensor> y = lowertest::runCompiled(*graph, {{"x", randomOf(dtype, {0, 2}, 1)}});
      ASSERT_EQ(y.size(), 1u);
      int64_t expected = 0;
      if (dtype == DType::I32)
        expected = op == "ReduceMax" ? std::numeric_limits<int32_t>::lowest()
                                     : std::numeric_limits<int32_t>::max();
      else if (dtype == DType::I8)
        expected = op == "ReduceMax" ? -128 : 127;
      else
        expected = op == "ReduceMax" ? 0 : 255;
      EXPECT_EQ(y[0].elementAsInt64(0), expected) << op << " " << dtypeName(dtype);
      EXPECT_EQ(y[0].elementAsInt64(1), expected) << op << " " << dtypeName(dtype);
      // The evaluator agrees.
      expectCompiledMatchesReference(*graph, {{"x", randomOf(dtype, {0, 2}, 1)}});
    }
  }
}

// ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSumExp: the scalar path.
const std::vector<std::string> kNormOps = {"ReduceL1", "ReduceL2", "ReduceSumSquare",
                                           "ReduceLogSumExp"};

TEST(LowerReduction, NormsOverEveryAxisSubset) {
  for (const std::string &op : kNormOps)
    for (unsigned mask = 0; mask < 16; ++mask)
      expectReduce(op, DType::F32, {"3", "n", "5", "7"}, axesOfMask(mask), mask % 2 == 0,
                   {3, 4, 5, 7}, -3, 3);
}

TEST(LowerReduction, NormsOfEveryDType) {
  for (const std::string &op : kNormOps) {
    for (DType dtype : {DType::F64, DType::F16, DType::BF16})
      expectReduce(op, dtype, {"12", "33"}, {1}, true, {12, 33}, -1, 1,
                   dtype == DType::F64 ? 1e-12 : 1e-2);
    // Integer sums of squares wrap in the element width; L2 and
    // LogSumExp round toward zero and saturate, as the evaluator.
    for (DType dtype : {DType::I8, DType::U8, DType::I32, DType::U32, DType::I64, DType::U64})
      for (std::vector<int64_t> axes : {std::vector<int64_t>{1}, {0, 2}})
        expectReduce(op, dtype, {"4", "6", "5"}, axes, false, {4, 6, 5},
                     isSignedInt(dtype) ? -100 : 0, 100, 0);
  }
}

TEST(LowerReduction, NormsOfEmptyAndUnitAxes) {
  for (const std::string &op : kNormOps) {
    expectReduce(op, DType::F32, {"0", "5"}, {0}, false, {0, 5}); // 0, or -inf for LogSumExp
    expectReduce(op, DType::I32, {"n", "5"}, {0}, true, {0, 5});
    // Reducing an axis of extent 1 still takes |x| or x*x.
    expectReduce(op, DType::F32, {"4", "1"}, {1}, true, {4, 1}, -3, 3);
  }
  auto noop = parseGraph(unaryGraph("ReduceSumSquare", "f32[n, 4]", "f32[n, 4]",
                                    "keepdims = 0, noop_with_empty_axes = 1"));
  expectCompiledMatchesReference(*noop, {{"x", randomOf(DType::F32, {3, 4}, 1)}});
}

TEST(LowerReduction, LogSumExpOfLargeAndInfiniteValues) {
  // Without the maximum taken out, exp(x) overflows past 88 in f32.
  expectReduce("ReduceLogSumExp", DType::F32, {"5", "40"}, {1}, false, {5, 40}, 80, 3000, 1e-6);
  Tensor x = randomOf(DType::F32, {4, 3}, 2);
  float inf = std::numeric_limits<float>::infinity();
  float *data = x.data<float>();
  data[0] = data[1] = data[2] = -inf;                // all -inf: -inf
  data[3] = inf;                                     // +inf
  data[7] = std::numeric_limits<float>::quiet_NaN(); // NaN
  data[9] = -inf;                                    // one -inf among finite values
  auto graph = parseGraph(reduceGraph("ReduceLogSumExp", DType::F32, {"4", "3"}, {1}, true));
  expectCompiledMatchesReference(*graph, {{"x", x}});
}

TEST(LowerReduction, AxesOnlyKnownAtRunTimeAreRefused) {
  // Shape inference cannot give such a result a shape the runtime can bind,
  // so lowering refuses the graph (whichever check sees it first).
  auto graph = parseGraph(R"(
graph @g(%x: f32[3, 4], %axes: i64[1]) -> (%y: f32[3, 1]) {
  %y = ReduceSum(%x, %axes) {keepdims = 1} : f32[3, 1]
  return %y
}
)");
  try {
    lowerOnly(*graph);
    FAIL() << "lowering succeeded";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("cannot compile"), std::string::npos) << error.what();
  }
}

TEST(LowerReduction, AxesComputedFromShapesAreReadBackFromTheResultShape) {
  // Not a constant in the graph (no folding ran), but shape inference knew
  // the contents: the reduced axes follow from the input and result shapes.
  auto graph = parseGraph(R"(
graph @g(%x: f32[3, n, 5], %z: f32[1]) -> (%y: f32[3, 1, 5]) {
  %axes = Shape(%z) : i64[1]
  %y = ReduceMean(%x, %axes) {keepdims = 1} : f32[3, 1, 5]
  return %y
}
)");
  expectCompiledMatchesReference(
      *graph, {{"x", randomOf(DType::F32, {3, 4, 5}, 1)}, {"z", randomOf(DType::F32, {1}, 2)}});
}

TEST(LowerArgReduce, EveryAxisKeepDimsAndSelectLast) {
  for (std::string op : {"ArgMax", "ArgMin"})
    for (DType dtype : {DType::F32, DType::I32, DType::U8, DType::F16})
      for (int64_t axis : {0, 1, 2, -1})
        for (int keepDims : {0, 1})
          for (int last : {0, 1}) {
            Dims dims = {"4", "n", "5"}, result;
            int64_t a = axis < 0 ? axis + 3 : axis;
            for (int64_t i = 0; i < 3; ++i)
              if (i != a || keepDims)
                result.push_back(i == a ? "1" : dims[size_t(i)]);
            std::string attrs = "axis = " + std::to_string(axis) +
                                ", keepdims = " + std::to_string(keepDims) +
                                ", select_last_index = " + std::to_string(last);
            SCOPED_TRACE(op + " " + attrs + " " + std::string(dtypeName(dtype)));
            auto graph =
                parseGraph(unaryGraph(op, type(dtype, dims), type(DType::I64, result), attrs));
            // Few distinct values, so ties are common.
            expectCompiledMatchesReference(*graph, {{"x", randomOf(dtype, {4, 7, 5}, 5, 0, 3)}});
          }
}

TEST(LowerCumSum, EveryAxisExclusiveReverse) {
  for (DType dtype : {DType::F32, DType::I32, DType::F16, DType::U8})
    for (int64_t axis : {0, 1, 2, -1})
      for (int exclusive : {0, 1})
        for (int reverse : {0, 1}) {
          std::string attrs =
              "exclusive = " + std::to_string(exclusive) + ", reverse = " + std::to_string(reverse);
          std::string text = "graph @g(%x: " + type(dtype, {"3", "n", "5"}) +
                             ") -> (%y: " + type(dtype, {"3", "n", "5"}) +
                             ") {\n  const %axis: i64[] = dense<" + std::to_string(axis) +
                             ">\n  %y = CumSum(%x, %axis) {" + attrs +
                             "} : " + type(dtype, {"3", "n", "5"}) + "\n  return %y\n}\n";
          SCOPED_TRACE(text);
          expectCompiledMatchesReference(*parseGraph(text),
                                         {{"x", randomOf(dtype, {3, 4, 5}, 9, 0, 20)}}, 1e-3);
        }
}

TEST(LowerCumSum, AxisKnownOnlyAtRunTime) {
  auto graph = parseGraph(R"(
graph @g(%x: f32[3, n, 5], %axis: i32[]) -> (%y: f32[3, n, 5]) {
  %y = CumSum(%x, %axis) {reverse = 1} : f32[3, n, 5]
  return %y
}
)");
  for (int32_t axis : {0, 1, -1, -3, 2})
    expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {3, 4, 5}, 2)},
                                            {"axis", Tensor::scalar<int32_t>(axis)}});
  // An axis outside [-3, 3) fails the run, as the evaluator fails.
  for (int32_t axis : {3, -4}) {
    SCOPED_TRACE(axis);
    std::map<std::string, Tensor> inputs = {{"x", randomOf(DType::F32, {3, 4, 5}, 2)},
                                            {"axis", Tensor::scalar<int32_t>(axis)}};
    EXPECT_THROW(lowertest::runReference(*graph, inputs), Error);
    try {
      lowertest::runCompiled(*graph, inputs);
      ADD_FAILURE() << "the run did not fail";
    } catch (const Error &e) {
      EXPECT_STREQ(e.what(), "step 'CumSum': the axis in 'axis' is out of range [-3, 3) for 'x'");
    }
  }
}

TEST(LowerCumProd, EveryAxisExclusiveReverse) {
  // Factors near 1 (and small integers, which wrap alike) keep products of
  // up to 5 in range for f16.
  for (DType dtype : {DType::F32, DType::I32, DType::F16, DType::U32})
    for (int64_t axis : {0, 1, -1})
      for (int exclusive : {0, 1})
        for (int reverse : {0, 1}) {
          std::string attrs =
              "exclusive = " + std::to_string(exclusive) + ", reverse = " + std::to_string(reverse);
          std::string text = "graph @g(%x: " + type(dtype, {"3", "n", "5"}) +
                             ", %axis: i32[]) -> (%y: " + type(dtype, {"3", "n", "5"}) +
                             ") {\n  %y = CumProd(%x, %axis) {" + attrs +
                             "} : " + type(dtype, {"3", "n", "5"}) + "\n  return %y\n}\n";
          SCOPED_TRACE(text + " axis " + std::to_string(axis));
          bool fp = isFloat(dtype);
          expectCompiledMatchesReference(
              *parseGraph(text),
              {{"x", randomOf(dtype, {3, 4, 5}, 9, fp ? -1.5 : 0, fp ? 1.5 : 7)},
               {"axis", Tensor::scalar<int32_t>(int32_t(axis))}},
              1e-3);
        }
}

// ---- normalization ---------------------------------------------------------

TEST(LowerSoftmax, RowsOfEveryLength) {
  for (std::string op : {"Softmax", "LogSoftmax"})
    for (int64_t length : {1, 7, 8, 33, 384}) {
      std::string l = std::to_string(length);
      for (Dims dims : {Dims{"6", l}, Dims{"n", "m"}, Dims{"2", "3", l, "1"}}) {
        std::string attrs = dims.size() == 4 ? "axis = 2" : "axis = -1";
        SCOPED_TRACE(op + " " + join(dims));
        std::vector<int64_t> input = dims.size() == 4 ? std::vector<int64_t>{2, 3, length, 1}
                                                      : std::vector<int64_t>{6, length};
        auto graph =
            parseGraph(unaryGraph(op, type(DType::F32, dims), type(DType::F32, dims), attrs));
        expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, input, 4, -5, 5)}});
      }
    }
}

TEST(LowerSoftmax, OtherAxesAndDtypes) {
  for (std::string op : {"Softmax", "LogSoftmax"})
    for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16})
      for (int64_t axis : {0, 1, 2}) {
        Dims dims = {"2", "n", "33"};
        SCOPED_TRACE(op + " " + std::string(dtypeName(dtype)) + " axis " + std::to_string(axis));
        auto graph = parseGraph(
            unaryGraph(op, type(dtype, dims), type(dtype, dims), "axis = " + std::to_string(axis)));
        double rtol = dtype == DType::F64 ? 1e-6 : dtype == DType::F32 ? 1e-4 : 1e-2;
        expectCompiledMatchesReference(*graph, {{"x", randomOf(dtype, {2, 3, 33}, 8, -5, 5)}}, rtol,
                                       1e-5);
      }
}

/// LayerNormalization/RMSNormalization of x: `dims` along `axis`, with
/// scale (and bias) of `scaleDims`; `stats` adds LayerNorm's two outputs.
std::string normGraph(const std::string &op, DType dtype, const Dims &dims, int64_t axis,
                      const Dims &scaleDims, bool bias, bool stats, DType scaleType) {
  std::string xt = type(dtype, dims);
  std::string st = type(scaleType, scaleDims);
  Dims statDims;
  for (size_t i = 0; i < dims.size(); ++i)
    statDims.push_back(int64_t(i) < axis ? dims[i] : "1");
  std::string outputs = "%y: " + xt, results = "%y", types = xt;
  if (stats) {
    outputs += ", %mean: " + type(DType::F32, statDims) + ", %inv: " + type(DType::F32, statDims);
    results += ", %mean, %inv";
    types += ", " + type(DType::F32, statDims) + ", " + type(DType::F32, statDims);
  }
  std::string text = "graph @g(%x: " + xt + ", %scale: " + st + (bias ? ", %bias: " + st : "") +
                     ") -> (" + outputs + ") {\n";
  text += "  " + results + " = " + op + "(%x, %scale" + (bias ? ", %bias" : "") +
          ") {axis = " + std::to_string(axis) + ", epsilon = 1e-3} : " + types + "\n";
  return text + "  return " + results + "\n}\n";
}

void expectNorm(const std::string &op, DType dtype, const Dims &dims, int64_t axis,
                const Dims &scaleDims, bool bias, bool stats, const std::vector<int64_t> &input,
                const std::vector<int64_t> &scaleShape, DType scaleType = DType::Unknown) {
  scaleType = scaleType == DType::Unknown ? dtype : scaleType;
  std::string text = normGraph(op, dtype, dims, axis, scaleDims, bias, stats, scaleType);
  SCOPED_TRACE(text);
  std::map<std::string, Tensor> inputs = {{"x", randomOf(dtype, input, 1, -3, 5)},
                                          {"scale", randomOf(scaleType, scaleShape, 2, 0.5, 1.5)}};
  if (bias)
    inputs["bias"] = randomOf(scaleType, scaleShape, 3);
  double rtol = dtype == DType::F64 ? 1e-9 : dtype == DType::F32 ? 1e-4 : 1e-2;
  expectCompiledMatchesReference(*parseGraph(text), inputs, rtol, 1e-5);
}

TEST(LowerNormalization, RowKernelLengths) {
  for (int64_t length : {1, 7, 8, 33, 384}) {
    std::string l = std::to_string(length);
    for (bool bias : {false, true}) {
      expectNorm("LayerNormalization", DType::F32, {"3", "5", l}, -1, {l}, bias, false,
                 {3, 5, length}, {length});
      expectNorm("LayerNormalization", DType::F32, {"n", "m"}, 1, {"m"}, bias, false, {4, length},
                 {length});
    }
    expectNorm("RMSNormalization", DType::F32, {"3", "5", l}, -1, {l}, false, false, {3, 5, length},
               {length});
    expectNorm("RMSNormalization", DType::F32, {"n", "m"}, -1, {"m"}, false, false, {4, length},
               {length});
  }
}

TEST(LowerNormalization, TrailingAxesBroadcastScaleAndStatistics) {
  // Two normalized axes, exact and broadcast scale.
  expectNorm("LayerNormalization", DType::F32, {"3", "5", "33"}, 1, {"5", "33"}, true, false,
             {3, 5, 33}, {5, 33});
  expectNorm("LayerNormalization", DType::F32, {"3", "5", "33"}, 1, {"33"}, true, false, {3, 5, 33},
             {33});
  expectNorm("LayerNormalization", DType::F32, {"3", "5", "33"}, 1, {"5", "1"}, false, false,
             {3, 5, 33}, {5, 1});
  expectNorm("RMSNormalization", DType::F32, {"n", "5", "8"}, 1, {"8"}, false, false, {3, 5, 8},
             {8});
  // Mean and InvStdDev outputs.
  expectNorm("LayerNormalization", DType::F32, {"3", "n", "33"}, -1, {"33"}, true, true, {3, 4, 33},
             {33});
  expectNorm("LayerNormalization", DType::F32, {"3", "n", "33"}, 1, {"n", "33"}, false, true,
             {3, 4, 33}, {4, 33});
}

TEST(LowerNormalization, OtherDtypes) {
  for (DType dtype : {DType::F64, DType::F16, DType::BF16}) {
    expectNorm("LayerNormalization", dtype, {"3", "33"}, -1, {"33"}, true, false, {3, 33}, {33});
    expectNorm("RMSNormalization", dtype, {"3", "33"}, -1, {"33"}, false, false, {3, 33}, {33});
  }
  // f32 data with a scale of another float type.
  expectNorm("RMSNormalization", DType::F32, {"3", "33"}, -1, {"33"}, false, false, {3, 33}, {33},
             DType::F16);
}

TEST(LowerNormalization, TransformerRowsUseTheRowKernels) {
  // One step each; the row kernel is emitted once for both softmaxes.
  auto graph = parseGraph(R"(
graph @g(%x: f32[b, 12, s, s]) -> (%y: f32[b, 12, s, s]) {
  %p = Softmax(%x) {axis = -1} : f32[b, 12, s, s]
  %y = Softmax(%p) {axis = -1} : f32[b, 12, s, s]
  return %y
}
)");
  EXPECT_EQ(lowerOnly(*graph).steps.size(), 2u);
  expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {2, 12, 9, 9}, 6, -4, 4)}},
                                 1e-4, 1e-6, 2);
}

} // namespace
} // namespace onnxc
