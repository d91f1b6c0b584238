//===- tests/unit/lower/LowerElementwiseTest.cpp - Elementwise kernels and fusion ===//
//
// Each test compiles a small graph through lowering + JIT + runtime and
// compares with the reference evaluator: vector tails, broadcasting (static,
// symbolic, decided at run time), every dtype class, Cast between every
// pair of dtypes, and fusion of elementwise chains into one step.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "ir/Error.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace onnxc {
namespace {

using lowertest::expectCompiledMatchesReference;
using lowertest::GraphText;
using lowertest::lowerOnly;
using lowertest::parseGraph;
using lowertest::randomOf;
using lowertest::runCompiled;
using lowertest::runReference;

/// Random floats with NaN, +-inf and +-0 in the first elements.
Tensor withSpecials(DType type, std::vector<int64_t> dims, unsigned seed, double lo, double hi) {
  Tensor t = randomOf(type, std::move(dims), seed, lo, hi);
  const double specials[] = {std::nan(""), INFINITY, -INFINITY, 0.0, -0.0};
  for (int64_t i = 0; i < std::min<int64_t>(5, t.numElements()); ++i)
    t.setElementFromDouble(i, specials[i]);
  return t;
}

/// Integers in [lo, hi) with 0 replaced by `nonzero`.
Tensor nonzeroInts(DType type, std::vector<int64_t> dims, unsigned seed, double lo, double hi,
                   double nonzero = 3) {
  Tensor t = randomOf(type, std::move(dims), seed, lo, hi);
  for (int64_t i = 0; i < t.numElements(); ++i)
    if (t.elementAsDouble(i) == 0)
      t.setElementFromDouble(i, nonzero);
  return t;
}

const std::vector<int64_t> kTailLengths = {1, 7, 8, 9, 33, 1000};

// ---- f32 fast paths -------------------------------------------------------------

TEST(LowerElementwise, BinaryF32VectorTails) {
  GraphText g;
  g.input("x", "f32[n]").input("y", "f32[n]");
  for (const char *op : {"Add", "Sub", "Mul", "Div", "Max", "Min"})
    g.output(std::string(op), "f32[n]", std::string(op) + "(%x, %y)");
  auto graph = parseGraph(g.str());
  for (int64_t n : kTailLengths)
    expectCompiledMatchesReference(*graph, {{"x", withSpecials(DType::F32, {n}, 1, -3, 3)},
                                            {"y", randomOf(DType::F32, {n}, 2, -3, 3)}});
}

TEST(LowerElementwise, UnaryF32) {
  GraphText g;
  g.input("x", "f32[n]");
  for (const char *op : {"Sqrt", "Reciprocal", "Neg", "Abs", "Sign", "Floor", "Ceil", "Exp", "Log",
                         "Erf", "Tanh", "Sigmoid", "Relu", "Gelu", "Sin", "Cos"})
    g.output(std::string(op), "f32[n]", std::string(op) + "(%x)");
  g.output("leaky", "f32[n]", "LeakyRelu(%x) {alpha = 0.2}");
  g.output("gelu_tanh", "f32[n]", "Gelu(%x) {approximate = \"tanh\"}");
  g.output("isnan", "bool[n]", "IsNaN(%x)");
  g.output("isinf", "bool[n]", "IsInf(%x)");
  g.output("isposinf", "bool[n]", "IsInf(%x) {detect_negative = 0}");
  g.output("isneginf", "bool[n]", "IsInf(%x) {detect_positive = 0}");
  auto graph = parseGraph(g.str());
  for (int64_t n : kTailLengths)
    expectCompiledMatchesReference(*graph, {{"x", withSpecials(DType::F32, {n}, 3, -6, 6)}}, 1e-4,
                                   1e-6);
}

TEST(LowerElementwise, EluKeepsRelativeAccuracyNearZero) {
  GraphText g;
  g.input("x", "f32[n]").input("d", "f64[n]");
  g.output("elu", "f32[n]", "Elu(%x)");
  g.output("scaled", "f32[n]", "Elu(%x) {alpha = 0.3}");
  g.output("wide", "f64[n]", "Elu(%d)");
  auto graph = parseGraph(g.str());
  GraphText h;
  h.input("h", "f16[n]").input("bf", "bf16[n]");
  h.output("half", "f16[n]", "Elu(%h) {alpha = 2.0}");
  h.output("brain", "bf16[n]", "Elu(%bf)");
  auto halves = parseGraph(h.str());
  for (int64_t n : kTailLengths) {
    // Both branches of the kernel's expm1 (|x| < 0.35 and beyond) and the
    // tiny negatives where exp(x) - 1 would lose every digit.
    Tensor x = withSpecials(DType::F32, {n}, 5, -4, 1);
    for (int64_t i = 5; i < n; i += 3)
      x.data<float>()[i] *= i % 2 ? 1e-5f : 0.1f;
    expectCompiledMatchesReference(
        *graph, {{"x", x}, {"d", withSpecials(DType::F64, {n}, 7, -4, 1)}}, 1e-6, 1e-30);
    // One rounding to 8 or 11 bits: a float result a hair away may round
    // to the neighbouring half.
    expectCompiledMatchesReference(*halves,
                                   {{"h", withSpecials(DType::F16, {n}, 6, -4, 1)},
                                    {"bf", withSpecials(DType::BF16, {n}, 8, -4, 1)}},
                                   1e-2, 1e-6);
  }
}

TEST(LowerElementwise, EluFusesIntoTheChain) {
  // Graph attention: Elu(Add(x, b)) * w is one kernel.
  auto graph = parseGraph(R"(
graph @g(%x: f32[n, 8], %b: f32[8], %w: f32[n, 8]) -> (%y: f32[n, 8]) {
  %s = Add(%x, %b)
  %e = Elu(%s) {alpha = 1.0}
  %y = Mul(%e, %w)
  return %y
}
)");
  EXPECT_EQ(lowerOnly(*graph).steps.size(), 1u);
  expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {5, 8}, 1, -3, 3)},
                                          {"b", randomOf(DType::F32, {8}, 2)},
                                          {"w", randomOf(DType::F32, {5, 8}, 3)}});
}

TEST(LowerElementwise, BroadcastingStaticAndSymbolic) {
  GraphText g;
  g.input("x", "f32[m, n]").input("b", "f32[n]").input("c", "f32[m, 1]").input("s", "f32[]");
  g.output("bias", "f32[m, n]", "Add(%x, %b)");
  g.output("rows", "f32[m, n]", "Mul(%x, %c)");
  g.output("scalar", "f32[m, n]", "Sub(%s, %x)");
  g.output("outer", "f32[m, n]", "Add(%b, %c)");
  g.output("three", "f32[m, n]", "Sum(%x, %b, %c)");
  auto graph = parseGraph(g.str());
  for (auto [m, n] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {2, 8}, {5, 33}, {4, 1}})
    expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {m, n}, 4)},
                                            {"b", randomOf(DType::F32, {n}, 5)},
                                            {"c", randomOf(DType::F32, {m, 1}, 6)},
                                            {"s", randomOf(DType::F32, {}, 7)}});
}

TEST(LowerElementwise, BroadcastingRank3) {
  GraphText g;
  g.input("x", "f32[b, s, 12]").input("y", "f32[s, 12]").input("z", "f32[b, 1, 12]");
  g.input("w", "f32[b, s, 1]").input("one", "f32[1]");
  g.output("xy", "f32[b, s, 12]", "Add(%x, %y)");
  g.output("xz", "f32[b, s, 12]", "Mul(%x, %z)");
  g.output("xw", "f32[b, s, 12]", "Div(%x, %w)");
  g.output("yz", "f32[b, s, 12]", "Sub(%y, %z)");
  g.output("zw", "f32[b, s, 12]", "Max(%z, %w, %one)");
  auto graph = parseGraph(g.str());
  for (auto [b, s] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 3}, {3, 5}})
    expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {b, s, 12}, 8)},
                                            {"y", randomOf(DType::F32, {s, 12}, 9)},
                                            {"z", randomOf(DType::F32, {b, 1, 12}, 10)},
                                            {"w", randomOf(DType::F32, {b, s, 1}, 11, 0.5, 2)},
                                            {"one", randomOf(DType::F32, {1}, 12)}});
}

TEST(LowerElementwise, BroadcastDecidedAtRunTime) {
  // k is 1 or 8 at run time: the stride of y is chosen when the kernel runs.
  GraphText g;
  g.input("x", "f32[8]").input("y", "f32[k]");
  g.output("z", "f32[8]", "Add(%x, %y)");
  auto graph = parseGraph(g.str());
  for (int64_t k : {1, 8})
    expectCompiledMatchesReference(
        *graph, {{"x", randomOf(DType::F32, {8}, 13)}, {"y", randomOf(DType::F32, {k}, 14)}});
}

TEST(LowerElementwise, LargeTensorsOnSeveralThreads) {
  GraphText g;
  g.input("x", "f32[m, n]").input("b", "f32[n]").input("c", "f32[m, 1]");
  g.output("y", "f32[m, n]", "Add(%x, %b)");
  g.output("z", "f32[m, n]", "Mul(%x, %c)");
  g.output("e", "f32[m, n]", "Exp(%x)");
  auto graph = parseGraph(g.str());
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{7, 30001}, {50001, 3}})
    expectCompiledMatchesReference(*graph,
                                   {{"x", randomOf(DType::F32, {m, n}, 15)},
                                    {"b", randomOf(DType::F32, {n}, 16)},
                                    {"c", randomOf(DType::F32, {m, 1}, 17)}},
                                   1e-4, 1e-6, /*threads=*/2);
}

// ---- other dtypes ----------------------------------------------------------------

TEST(LowerElementwise, IntegerArithmeticEveryWidth) {
  for (const char *type : {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}) {
    SCOPED_TRACE(type);
    DType dtype = *parseDType(type);
    bool isSigned = isSignedInt(dtype);
    std::string t = std::string(type) + "[n]";
    GraphText g;
    g.input("a", t).input("b", t);
    for (const char *op : {"Add", "Sub", "Mul", "Div", "Max", "Min"})
      g.output(op, t, std::string(op) + "(%a, %b)");
    g.output("mod", t, "Mod(%a, %b)");
    g.output("fmod", t, "Mod(%a, %b) {fmod = 1}");
    g.output("abs", t, "Abs(%a)");
    g.output("sign", t, "Sign(%a)");
    g.output("less", "bool[n]", "Less(%a, %b)");
    g.output("equal", "bool[n]", "Equal(%a, %b)");
    if (isSigned) {
      g.output("neg", t, "Neg(%a)");
      g.output("relu", t, "Relu(%a)");
    }
    auto graph = parseGraph(g.str());
    double lo = isSigned ? -100 : 0, hi = isSigned ? 100 : 200;
    for (int64_t n : {1, 9, 40})
      expectCompiledMatchesReference(*graph, {{"a", randomOf(dtype, {n}, 20, lo, hi)},
                                              {"b", nonzeroInts(dtype, {n}, 21, lo / 4, hi / 4)}});
  }
}

TEST(LowerElementwise, IntegerEdgeCases) {
  // INT_MIN / -1 wraps and % -1 is 0 (neither traps).
  GraphText g;
  g.input("a", "i32[6]").input("b", "i32[6]");
  g.output("div", "i32[6]", "Div(%a, %b)");
  g.output("mod", "i32[6]", "Mod(%a, %b)");
  g.output("fmod", "i32[6]", "Mod(%a, %b) {fmod = 1}");
  auto graph = parseGraph(g.str());
  const int32_t min = std::numeric_limits<int32_t>::min();
  Tensor a = Tensor::fromVector<int32_t>({6}, {min, -7, 7, -7, 5, 9});
  Tensor b = Tensor::fromVector<int32_t>({6}, {-1, 2, -2, -2, 3, -4});
  std::vector<Tensor> out = runCompiled(*graph, {{"a", a}, {"b", b}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(std::vector<int32_t>(out[0].data<int32_t>(), out[0].data<int32_t>() + 6),
            (std::vector<int32_t>{min, -3, -3, 3, 1, -2}));
  EXPECT_EQ(std::vector<int32_t>(out[1].data<int32_t>(), out[1].data<int32_t>() + 6),
            (std::vector<int32_t>{0, 1, -1, -1, 2, -3}));
  EXPECT_EQ(std::vector<int32_t>(out[2].data<int32_t>(), out[2].data<int32_t>() + 6),
            (std::vector<int32_t>{0, -1, 1, -1, 2, 1}));
}

/// A scalar of `dtype` holding `value`.
Tensor scalarOf(DType dtype, double value) {
  Tensor t(dtype, {});
  t.setElementFromDouble(0, value);
  return t;
}

/// Expects the compiled run (and the evaluator) to fail on `inputs`, the
/// compiled one with "step '<name>': <failure>", where the step's name
/// holds `nodeName` (a fused step is named after all its nodes).
void expectRunFails(const Graph &graph, const std::map<std::string, Tensor> &inputs,
                    const std::string &nodeName, const std::string &failure) {
  EXPECT_THROW(lowertest::runReference(graph, inputs), Error);
  try {
    runCompiled(graph, inputs);
    ADD_FAILURE() << "the run did not fail";
  } catch (const Error &e) {
    std::string message = e.what(), tail = "': " + failure;
    EXPECT_EQ(message.rfind("step '", 0), 0u) << message;
    ASSERT_GE(message.size(), tail.size()) << message;
    EXPECT_EQ(message.substr(message.size() - tail.size()), tail);
    EXPECT_NE(message.substr(0, message.size() - tail.size()).find(nodeName), std::string::npos)
        << message;
  }
}

TEST(LowerElementwise, IntegerDivisionByZeroFailsTheRun) {
  // The evaluator throws; the compiled run fails naming the Div/Mod node,
  // also inside a fused chain whose step is named after the whole chain.
  for (const char *type : {"i32", "u8", "i64"}) {
    SCOPED_TRACE(type);
    DType dtype = *parseDType(type);
    std::string t = std::string(type) + "[n]";
    GraphText g;
    g.input("a", t).input("b", t).input("s", std::string(type) + "[]");
    g.node("%q = Div(%a, %b) loc(\"div1\")");
    g.output("r", t, "Add(%q, %a) loc(\"add1\")");
    g.output("m", t, "Mod(%a, %s) {fmod = 1} loc(\"mod1\")");
    auto graph = parseGraph(g.str());
    for (int64_t n : {3, 8, 11}) {
      SCOPED_TRACE(n);
      Tensor a = randomOf(dtype, {n}, 1, 0, 100);
      Tensor b = nonzeroInts(dtype, {n}, 2, 0, 9);
      Tensor s = scalarOf(dtype, 7);
      // Masked tail lanes must not count as zero divisors.
      expectCompiledMatchesReference(*graph, {{"a", a}, {"b", b}, {"s", s}});
      for (int64_t at : {int64_t(0), n - 1}) {
        Tensor zeroB = b.clone();
        zeroB.setElementFromDouble(at, 0);
        expectRunFails(*graph, {{"a", a}, {"b", zeroB}, {"s", s}}, "div1",
                       "integer Div by zero in node 'div1': an element of the divisor 'b' is 0 "
                       "(must be non-zero)");
      }
      expectRunFails(*graph, {{"a", a}, {"b", b}, {"s", scalarOf(dtype, 0)}}, "mod1",
                     "integer Mod by zero in node 'mod1': an element of the divisor 's' is 0 "
                     "(must be non-zero)");
    }
  }
}

TEST(LowerElementwise, BroadcastAssumedByInferenceIsChecked) {
  // Inference lets k face 8 as "1 or 8" (the result is [8]) and records
  // that as a shape assumption; any other k must be refused before the run
  // as the evaluator refuses it, not read past y (found by the
  // jit-differential fuzzer: Max of [1, n*15] and [10, 3] ran at n = 4).
  GraphText g;
  g.input("x", "f32[8]").input("y", "f32[k]");
  g.output("z", "f32[8]", "Max(%x, %y) loc(\"max1\")");
  auto graph = parseGraph(g.str());
  for (int64_t k : {1, 8})
    expectCompiledMatchesReference(
        *graph, {{"x", randomOf(DType::F32, {8}, 13)}, {"y", randomOf(DType::F32, {k}, 14)}});
  for (int64_t k : {0, 2, 9, 60}) {
    SCOPED_TRACE(k);
    std::map<std::string, Tensor> inputs = {{"x", randomOf(DType::F32, {8}, 13)},
                                            {"y", randomOf(DType::F32, {k}, 14)}};
    std::string want =
        "node 'max1': the broadcast dimension k must be 1 or 8; the inputs give k = " +
        std::to_string(k);
    for (bool compiled : {false, true})
      try {
        compiled ? runCompiled(*graph, inputs) : lowertest::runReference(*graph, inputs);
        ADD_FAILURE() << "the run did not fail";
      } catch (const Error &e) {
        EXPECT_EQ(e.what(), want);
      }
  }
  // Also when the result is empty and the kernel has no task to run: b of
  // [0] against 17 at n = 0 (a later fuzz finding, through Where).
  GraphText empty;
  empty.input("a", "f32[n, 17]").input("b", "f32[n]");
  empty.output("z", "f32[n, 17]", "Add(%a, %b) loc(\"add1\")");
  auto emptyGraph = parseGraph(empty.str());
  EXPECT_THROW(runCompiled(*emptyGraph, {{"a", randomOf(DType::F32, {0, 17}, 15)},
                                         {"b", randomOf(DType::F32, {0}, 16)}}),
               Error);
}

TEST(LowerElementwise, HalfBfloatAndDouble) {
  struct Case {
    const char *type;
    double rtol;
  };
  for (Case c : {Case{"f16", 2e-3}, Case{"bf16", 1e-2}, Case{"f64", 1e-12}}) {
    SCOPED_TRACE(c.type);
    DType dtype = *parseDType(c.type);
    std::string t = std::string(c.type) + "[n]";
    GraphText g;
    g.input("x", t).input("y", t);
    for (const char *op : {"Add", "Mul", "Div", "Max", "Mean"})
      g.output(op, t, std::string(op) + "(%x, %y)");
    for (const char *op :
         {"Sqrt", "Exp", "Log", "Erf", "Tanh", "Sigmoid", "Gelu", "Sin", "Neg", "Floor", "Sign"})
      g.output(op, t, std::string(op) + "(%x)");
    g.output("gelu_tanh", t, "Gelu(%x) {approximate = \"tanh\"}");
    g.output("pow", t, "Pow(%y, %x)");
    g.output("mod", t, "Mod(%x, %y) {fmod = 1}");
    g.output("ge", "bool[n]", "GreaterOrEqual(%x, %y)");
    g.output("nan", "bool[n]", "IsNaN(%x)");
    auto graph = parseGraph(g.str());
    // The transcendental kernels differ from libm by a few ulp: relative
    // tolerance for f64 is looser than its precision.
    double rtol = dtype == DType::F64 ? 1e-6 : c.rtol;
    for (int64_t n : {1, 9, 33})
      expectCompiledMatchesReference(
          *graph,
          {{"x", withSpecials(dtype, {n}, 30, -4, 4)}, {"y", randomOf(dtype, {n}, 31, 0.25, 3)}},
          rtol, 1e-6);
  }
}

TEST(LowerElementwise, ComparisonsAndLogic) {
  for (const char *type : {"f32", "f16", "i64", "u8", "bool"}) {
    SCOPED_TRACE(type);
    DType dtype = *parseDType(type);
    std::string t = std::string(type) + "[n]";
    GraphText g;
    g.input("a", t).input("b", t);
    g.output("eq", "bool[n]", "Equal(%a, %b)");
    if (dtype != DType::Bool) {
      for (const char *op : {"Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
        g.output(op, "bool[n]", std::string(op) + "(%a, %b)");
    } else {
      for (const char *op : {"And", "Or", "Xor"})
        g.output(op, "bool[n]", std::string(op) + "(%a, %b)");
      g.output("not", "bool[n]", "Not(%a)");
    }
    auto graph = parseGraph(g.str());
    for (int64_t n : {1, 8, 17})
      expectCompiledMatchesReference(
          *graph, {{"a", randomOf(dtype, {n}, 40, 0, 4)}, {"b", randomOf(dtype, {n}, 41, 0, 4)}});
  }
}

TEST(LowerElementwise, CastBetweenEveryPair) {
  const std::vector<std::pair<const char *, int>> types = {
      {"f32", 1},  {"u8", 2},   {"i8", 3},   {"u16", 4},  {"i16", 5},  {"i32", 6},  {"i64", 7},
      {"bool", 9}, {"f16", 10}, {"f64", 11}, {"u32", 12}, {"u64", 13}, {"bf16", 16}};
  for (auto [from, fromCode] : types) {
    SCOPED_TRACE(from);
    DType dtype = *parseDType(from);
    GraphText g;
    g.input("x", std::string(from) + "[n]");
    for (auto [to, code] : types)
      g.output(std::string("to_") + to, std::string(to) + "[n]",
               "Cast(%x) {to = " + std::to_string(code) + "}");
    auto graph = parseGraph(g.str());
    Tensor x = isFloat(dtype) ? withSpecials(dtype, {37}, 50, -300.75, 300.75)
                              : randomOf(dtype, {37}, 50, isSignedInt(dtype) ? -120 : 0, 250);
    if (dtype == DType::F32 || dtype == DType::F64) { // saturation of wide values
      x.setElementFromDouble(5, 3.0e9);
      x.setElementFromDouble(6, -3.0e9);
      x.setElementFromDouble(7, 1.0e20);
    }
    if (dtype == DType::I64)
      x.setElementFromDouble(5, double(int64_t(1) << 40) + 1);
    expectCompiledMatchesReference(*graph, {{"x", x}}, 1e-6, 0);
  }
}

TEST(LowerElementwise, CastLikeWhereClip) {
  GraphText g;
  g.input("x", "f32[m, n]").input("y", "f32[n]").input("c", "bool[m, n]").input("k", "i32[2]");
  g.input("lo", "f32[]").input("hi", "f32[1]").input("i", "i64[m, n]");
  g.constant("%ilo: i64[] = dense<-3>");
  g.output("like", "i32[m, n]", "CastLike(%x, %k)");
  g.output("where", "f32[m, n]", "Where(%c, %x, %y)");
  g.output("where_i", "i64[m, n]", "Where(%c, %i, %i)");
  g.output("where_b", "bool[m, n]", "Where(%c, %c, %c)");
  g.output("clip", "f32[m, n]", "Clip(%x, %lo, %hi)");
  g.output("clip_max", "f32[m, n]", "Clip(%x, _, %hi)");
  g.output("clip_none", "f32[m, n]", "Clip(%x)");
  g.output("clip_swapped", "f32[m, n]", "Clip(%x, %hi, %lo)");
  g.output("clip_int", "i64[m, n]", "Clip(%i, %ilo)");
  auto graph = parseGraph(g.str());
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {3, 9}})
    expectCompiledMatchesReference(*graph, {{"x", withSpecials(DType::F32, {m, n}, 60, -3, 3)},
                                            {"y", randomOf(DType::F32, {n}, 61)},
                                            {"c", randomOf(DType::Bool, {m, n}, 62)},
                                            {"k", randomOf(DType::I32, {2}, 63, 0, 5)},
                                            {"lo", Tensor::scalar<float>(-0.5f)},
                                            {"hi", Tensor::fromVector<float>({1}, {0.75f})},
                                            {"i", randomOf(DType::I64, {m, n}, 64, -9, 9)}});
}

TEST(LowerElementwise, PowEveryTypeCombination) {
  GraphText g;
  g.input("x", "f32[n]").input("e", "f32[n]").input("ie", "i64[n]").input("ib", "i32[n]");
  g.input("h", "f16[n]");
  g.constant("%two: f32[] = dense<2.0>");
  g.output("ff", "f32[n]", "Pow(%x, %e)");
  g.output("square", "f32[n]", "Pow(%x, %two)");
  g.output("fi", "f32[n]", "Pow(%x, %ie)");
  g.output("ii", "i32[n]", "Pow(%ib, %ie)");
  g.output("if", "i32[n]", "Pow(%ib, %e)");
  g.output("hf", "f16[n]", "Pow(%h, %e)");
  auto graph = parseGraph(g.str());
  for (int64_t n : {1, 9, 33})
    expectCompiledMatchesReference(*graph,
                                   {{"x", randomOf(DType::F32, {n}, 70, -3, 3)},
                                    {"e", randomOf(DType::F32, {n}, 71, -3, 3)},
                                    {"ie", randomOf(DType::I64, {n}, 72, -3, 12)},
                                    {"ib", randomOf(DType::I32, {n}, 73, -4, 5)},
                                    {"h", randomOf(DType::F16, {n}, 74, 0.5, 2)}},
                                   2e-3, 1e-6);
}

TEST(LowerElementwise, NaryOpsPropagateNaN) {
  GraphText g;
  g.input("a", "f32[m, n]").input("b", "f32[n]").input("c", "f32[m, 1]");
  for (const char *op : {"Max", "Min", "Sum", "Mean"})
    g.output(op, "f32[m, n]", std::string(op) + "(%a, %b, %c)");
  g.output("single", "f32[m, n]", "Max(%a)");
  auto graph = parseGraph(g.str());
  expectCompiledMatchesReference(*graph, {{"a", withSpecials(DType::F32, {3, 11}, 80, -2, 2)},
                                          {"b", withSpecials(DType::F32, {11}, 81, -2, 2)},
                                          {"c", randomOf(DType::F32, {3, 1}, 82)}});
}

TEST(LowerElementwise, FloatModWithoutFmodIsFloorModulo) {
  // Opset 28 defines fmod = 0 on floats as A - floor(A / B) * B with the divisor's sign; the
  // pairs and their results are the special cases its specification lists.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const std::vector<std::array<float, 3>> cases = {
      {-5, 3, 1},        {5, -3, -1},      {5.5f, 2, 1.5f}, {-5.5f, 2, 0.5f},
      {0.0f, -2, -0.0f}, {-0.0f, 2, 0.0f}, {inf, 2, nan},   {-inf, -2, nan},
      {2, 0.0f, nan},    {2, -0.0f, nan},  {3, inf, 3},     {-3, inf, inf},
      {3, -inf, -inf},   {-3, -inf, -3},   {nan, 2, nan},   {2, nan, nan}};
  const int64_t n = int64_t(cases.size());
  std::vector<float> a, b;
  for (const auto &c : cases) {
    a.push_back(c[0]);
    b.push_back(c[1]);
  }
  auto graph = parseGraph(GraphText()
                              .input("a", "f32[n]")
                              .input("b", "f32[n]")
                              .output("m", "f32[n]", "Mod(%a, %b)")
                              .str());
  std::map<std::string, Tensor> inputs = {{"a", Tensor::fromVector<float>({n}, a)},
                                          {"b", Tensor::fromVector<float>({n}, b)}};
  for (const std::vector<Tensor> &results :
       std::vector<std::vector<Tensor>>{runCompiled(*graph, inputs), runReference(*graph, inputs)})
    for (int64_t i = 0; i < n; ++i) {
      float got = results[0].data<float>()[i], want = cases[size_t(i)][2];
      SCOPED_TRACE(std::to_string(a[size_t(i)]) + " mod " + std::to_string(b[size_t(i)]));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << got;
      } else {
        EXPECT_EQ(got, want);
        EXPECT_EQ(std::signbit(got), std::signbit(want));
      }
    }
}

// ---- fusion ----------------------------------------------------------------------

TEST(LowerElementwiseFusion, FourOpChainIsOneStep) {
  GraphText g;
  g.input("x", "f32[b, s, 64]").input("bias", "f32[64]").input("shift", "f32[b, s, 1]");
  g.constant("%scale: f32[] = dense<0.5>");
  g.node("%t1 = Add(%x, %bias)").node("%t2 = Relu(%t1)").node("%t3 = Mul(%t2, %scale)");
  g.output("y", "f32[b, s, 64]", "Sub(%t3, %shift)");
  auto graph = parseGraph(g.str());
  ModelPlan plan = lowerOnly(*graph);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_NE(plan.steps[0].name.find("+"), std::string::npos) << plan.steps[0].name;
  for (auto [b, s] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 7}})
    expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {b, s, 64}, 90)},
                                            {"bias", randomOf(DType::F32, {64}, 91)},
                                            {"shift", randomOf(DType::F32, {b, s, 1}, 92)}});
}

TEST(LowerElementwiseFusion, CastWhereAndComparisonsFuse) {
  GraphText g;
  g.input("x", "f32[n]").input("y", "f32[n]");
  g.constant("%zero: f32[] = dense<0.0>");
  g.node("%t = Mul(%x, %y)").node("%c = Greater(%t, %zero)").node("%w = Where(%c, %x, %y)");
  g.node("%h = Cast(%w) {to = 10}");
  g.output("out", "i32[n]", "Cast(%h) {to = 6}");
  auto graph = parseGraph(g.str());
  EXPECT_EQ(lowerOnly(*graph).steps.size(), 1u);
  for (int64_t n : {1, 9, 100})
    expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {n}, 93, -50, 50)},
                                            {"y", randomOf(DType::F32, {n}, 94, -50, 50)}});
}

TEST(LowerElementwiseFusion, GeluDecompositionSharesTheInput) {
  // x is read by the first and the fifth node; the chain Div..Mul fuses.
  GraphText g;
  g.input("x", "f32[b, 16]");
  g.constant("%sqrt2: f32[] = dense<1.4142135>").constant("%one: f32[] = dense<1.0>");
  g.constant("%half: f32[] = dense<0.5>");
  g.node("%t1 = Div(%x, %sqrt2)").node("%t2 = Erf(%t1)").node("%t3 = Add(%t2, %one)");
  g.node("%t4 = Mul(%x, %t3)");
  g.output("y", "f32[b, 16]", "Mul(%t4, %half)");
  auto graph = parseGraph(g.str());
  EXPECT_EQ(lowerOnly(*graph).steps.size(), 1u);
  expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {3, 16}, 95, -4, 4)}});
}

TEST(LowerElementwiseFusion, ChainsStopWhereTheyMust) {
  GraphText g;
  g.input("x", "f32[n]").input("y", "f32[m, n]");
  // t1 has two users: Exp and Add.
  g.node("%t1 = Neg(%x)").node("%t2 = Exp(%t1)");
  g.node("%t3 = Add(%t1, %t2)");
  // t3 then broadcasts into a larger result: not fused.
  g.output("big", "f32[m, n]", "Mul(%t3, %y)");
  // An intermediate that is a graph output ends its chain.
  g.output("out1", "f32[n]", "Abs(%x)");
  g.output("out2", "f32[n]", "Sqrt(%out1)");
  auto graph = parseGraph(g.str());
  // Neg | Exp+Add | Mul | Abs | Sqrt
  EXPECT_EQ(lowerOnly(*graph).steps.size(), 5u);
  expectCompiledMatchesReference(
      *graph, {{"x", randomOf(DType::F32, {9}, 96)}, {"y", randomOf(DType::F32, {2, 9}, 97)}});
}

TEST(LowerElementwiseFusion, HalfChainsMatchTheReference) {
  GraphText g;
  g.input("x", "f16[n]").input("y", "f16[n]");
  g.node("%t1 = Mul(%x, %y)").node("%t2 = Tanh(%t1)").node("%t3 = Add(%t2, %x)");
  g.output("out", "f32[n]", "Cast(%t3) {to = 1}");
  auto graph = parseGraph(g.str());
  EXPECT_EQ(lowerOnly(*graph).steps.size(), 1u);
  expectCompiledMatchesReference(
      *graph,
      {{"x", randomOf(DType::F16, {21}, 98, -2, 2)}, {"y", randomOf(DType::F16, {21}, 99, -2, 2)}},
      4e-3, 1e-3);
}

} // namespace
} // namespace onnxc
