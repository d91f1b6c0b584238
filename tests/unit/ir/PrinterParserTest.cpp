//===- tests/unit/ir/PrinterParserTest.cpp - Text IR, round trips, DOT ---------===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Subgraph.h"
#include "ir/Verifier.h"
#include "ir/text/DotExport.h"
#include "ir/text/Parser.h"
#include "ir/text/Printer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

using namespace onnxc;
using namespace onnxc::test;

namespace {

std::string roundTrip(const std::string &text, const PrintOptions &options = {}) {
  return printGraphToString(*parseGraph(text), options);
}

std::string parseError(const std::string &text) {
  try {
    parseGraph(text);
  } catch (const Error &e) {
    return e.what();
  }
  return "<no error>";
}

} // namespace

// --- printing -----------------------------------------------------------------

TEST(Printer, PrintsTheDocumentedForm) {
  Graph g("encoder");
  Dim batch = Dim::symbol("batch"), seq = Dim::symbol("seq");
  Value *ids = g.addInput("input_ids", type(DType::I64, {batch, seq}));
  Value *emb = g.addConstant("emb.weight", Tensor(DType::F32, {100, 64}));
  Value *axes = g.addConstant("axes", Tensor::fromVector<int64_t>({1}, {-1}));
  Value *eps = g.addConstant("eps", Tensor::scalar<float>(1e-12f));
  Node *gather = g.createNode(OpKind::Gather, {emb, ids}, 1, "", {"x"});
  gather->setAttr("axis", 0);
  gather->result()->setType(type(DType::F32, {batch, seq, 64}));
  Node *mean = g.createNode(OpKind::ReduceMean, {gather->result(), axes}, 1, "/enc/Mean",
                            {"/enc/Mean_output_0"});
  mean->setAttr("keepdims", 1);
  Node *add = g.createNode(OpKind::Add, {mean->result(), eps}, 1, "", {"y"});
  g.addOutput("out", add->result());

  PrintOptions options;
  options.printNodeNames = true;
  EXPECT_EQ(printGraphToString(g, options),
            "graph @encoder(%input_ids: i64[batch, seq]) -> (%out: unknown[*]) {\n"
            "  const %emb.weight: f32[100, 64] = dense<elided>\n"
            "  const %axes: i64[1] = dense<[-1]>\n"
            "  const %eps: f32[] = dense<1e-12>\n"
            "  %x = Gather(%emb.weight, %input_ids) {axis = 0} : f32[batch, seq, 64]\n"
            "  %\"/enc/Mean_output_0\" = ReduceMean(%x, %axes) {keepdims = 1} loc(\"/enc/Mean\")\n"
            "  %y = Add(%\"/enc/Mean_output_0\", %eps)\n"
            "  return %y\n"
            "}\n");
  EXPECT_EQ(printNode(*add), "%y = Add(%\"/enc/Mean_output_0\", %eps)");
}

TEST(Printer, FloatsAreShortestAndNeverLookLikeInts) {
  auto text = [](float v) {
    Graph g;
    Node *n = g.createNode(OpKind::LeakyRelu, {g.addInput("x", {})}, 1, "", {"y"});
    n->setAttr("alpha", v);
    std::string s = printNode(*n);
    return s.substr(s.find("alpha = ") + 8, s.find('}') - s.find("alpha = ") - 8);
  };
  EXPECT_EQ(text(1.0f), "1.0");
  EXPECT_EQ(text(100.0f), "100.0");
  EXPECT_EQ(text(0.1f), "0.1");
  EXPECT_EQ(text(1e-12f), "1e-12");
  EXPECT_EQ(text(-0.0f), "-0.0");
  EXPECT_EQ(text(3.4028235e38f), "3.4028235e+38");
  EXPECT_EQ(text(std::numeric_limits<float>::infinity()), "inf");
  EXPECT_EQ(text(-std::numeric_limits<float>::infinity()), "-inf");
  EXPECT_EQ(text(std::numeric_limits<float>::quiet_NaN()), "nan");
}

TEST(Printer, ConstantFormsFollowTheOptions) {
  Graph g;
  g.addConstant("small", Tensor::fromVector<int32_t>({2}, {1, -2}));
  g.addConstant("f16", Tensor::fromVector<uint16_t>({2}, {floatToHalf(0.5f), floatToHalf(-2)}));
  g.addConstant("flag", Tensor::boolScalar(true));
  g.addConstant("none", Tensor::elided(DType::F32, {2}));
  g.addConstant("empty", Tensor(DType::F32, {0, 3}));
  std::string text = printGraphToString(g);
  EXPECT_NE(text.find("const %small: i32[2] = dense<[1, -2]>"), std::string::npos);
  EXPECT_NE(text.find("const %flag: bool[] = dense<true>"), std::string::npos);
  EXPECT_NE(text.find("const %none: f32[2] = dense<elided>"), std::string::npos);
  EXPECT_NE(text.find("const %empty: f32[0, 3] = dense<[]>"), std::string::npos);

  PrintOptions tight;
  tight.maxInlineElements = 1;
  EXPECT_NE(printGraphToString(g, tight).find("%small: i32[2] = dense<elided>"), std::string::npos);

  PrintOptions all;
  all.printAllConstants = true;
  text = printGraphToString(g, all);
  EXPECT_NE(text.find("%small: i32[2] = dense<0x01000000feffffff>"), std::string::npos);
  EXPECT_NE(text.find("%none: f32[2] = dense<elided>"), std::string::npos); // nothing to print
}

// --- parsing --------------------------------------------------------------------

TEST(Parser, ReadsTheDocumentedExample) {
  const char *text = R"(# leading comment
graph @encoder(%input_ids: i64[batch, seq], %mask: i64[batch, seq]) -> (%out: f32[batch, ?, 64]) {
  const %emb.weight: f32[100, 64] = dense<elided>
  const %g: f32[64] = dense<elided>
  const %starts: i64[1] = dense<[0]>
  const %ends: i64[1] = dense<[-1]>
  const %steps: i64[1] = dense<[1]>
  %x = Gather(%emb.weight, %input_ids) {axis = 0} : f32[batch, seq, 64]
  %y, %mean = LayerNormalization(%x, %g) {axis = -1, epsilon = 9.99999996e-13} : f32[batch, seq, 64], f32[batch, seq, 1]
  %z = Slice(%y, %starts, %ends, _, %steps) : f32[batch, ?, 64]  # trailing comment
  %h = Relu(%z) : f32[batch, ?, 64] loc("/encoder/Relu")
  return %h
}
)";
  std::unique_ptr<Graph> g = parseGraph(text);
  verifyGraph(*g);
  EXPECT_EQ(g->name(), "encoder");
  EXPECT_EQ(g->numNodes(), 4u);
  Node *slice = g->findValue("z")->definingNode();
  EXPECT_EQ(slice->numOperands(), 5u);
  EXPECT_FALSE(slice->hasOperand(3));
  Node *relu = g->findValue("h")->definingNode();
  EXPECT_EQ(relu->name(), "/encoder/Relu");
  EXPECT_EQ(g->outputs()[0].name, "out");
  EXPECT_EQ(g->findValue("mean")->shape().str(), "[batch, seq, 1]");
  EXPECT_EQ(g->findValue("y")->definingNode()->getFloat("epsilon", 0), 9.99999996e-13f);
  EXPECT_EQ(g->findValue("ends")->constantValue().data<int64_t>()[0], -1);
  EXPECT_FALSE(g->findValue("g")->constantValue().hasData());
}

TEST(Parser, DimExpressionsAndLeniency) {
  std::unique_ptr<Graph> g = parseGraph(
      "graph @g(%x: f32[(batch + 1) * seq, seq*12, -seq+1, ?], %s: i8[]) -> (%y: f32[2]) {\n"
      "  const %c: f32[2] = dense<[1, 2.5]>\n"
      "  %y = Neg(%c)\n"
      "  return %y\n"
      "}\n");
  EXPECT_EQ(g->inputs()[0]->shape().str(), "[batch*seq+seq, seq*12, -seq+1, ?]");
  EXPECT_EQ(g->inputs()[1]->shape().rank(), 0u);
  // The declared output type fills a result the text left untyped.
  EXPECT_EQ(g->findValue("y")->type().str(), "f32[2]");
  EXPECT_EQ(g->findValue("c")->constantValue().data<float>()[1], 2.5f);
}

TEST(Parser, ReportsPositionedErrors) {
  auto graphWith = [](const std::string &body) {
    return "graph @g(%x: f32[2]) -> (%y: f32[2]) {\n" + body + "  return %y\n}\n";
  };
  EXPECT_EQ(parseError(graphWith("  %y = Relu(%z)\n")),
            "<input>:2:13: use of undefined value '%z'");
  EXPECT_EQ(parseError(graphWith("  %y = Foo(%x)\n")), "<input>:2:8: unknown op 'Foo'");
  EXPECT_EQ(parseError(graphWith("  %x = Relu(%x)\n")), "<input>:2:3: value '%x' defined twice");
  EXPECT_EQ(parseError("graph @g(%x: f32[2) -> () {\n  return\n}\n"), "<input>:1:19: expected ']'");
  EXPECT_EQ(parseError(graphWith("  const %c: f32[3] = dense<[1.0, 2.0]>\n  %y = Relu(%x)\n")),
            "<input>:2:22: literal has 2 elements, type f32[3] needs 3");

  struct Case {
    std::string text, message;
  };
  std::vector<Case> cases = {
      {graphWith("  %y = Relu(%x) : f99[2]\n"), "unknown dtype 'f99'"},
      {graphWith("  %y = Relu(%x) : f32[2, 3+]\n"), "invalid dimension '3+'"},
      {graphWith("  %y = Relu(%x) : f32[2], f32[2]\n"), "expected 1 result types, got 2"},
      {graphWith("  %y = Relu(%x) : f32[3]\n"), "'%y' is f32[3]"},
      {graphWith("  %y = Relu(%w)\n  %w = Relu(%x)\n"), "use of undefined value '%w'"},
      {graphWith("  %y = Relu(%x)\n  const %c: f32[] = dense<1.0>\n"),
       "constants must come before"},
      {graphWith("  const %c: u8[1] = dense<[300]>\n  %y = Relu(%x)\n"), "300 out of range for u8"},
      {graphWith("  const %c: bool[] = dense<2>\n  %y = Relu(%x)\n"), "'true' or 'false'"},
      {graphWith("  const %c: i32[] = dense<1.5>\n  %y = Relu(%x)\n"), "expected an integer"},
      {graphWith("  const %c: f32[1] = dense<0x0000>\n  %y = Relu(%x)\n"),
       "hex literal has 2 bytes"},
      {graphWith("  const %c: f32[1] = dense<1.0>\n  %y = Relu(%x)\n"), "needs a rank-0 type"},
      {graphWith("  const %c: f32[n] = dense<elided>\n  %y = Relu(%x)\n"), "constant dimensions"},
      {graphWith("  %y = Relu(%x) {a = \"bad\\q\"}\n"), "unknown escape"},
      {graphWith("  %y = Relu(%x) {a = \"open}\n"), "unterminated string"},
      {graphWith("  %y = Relu(%x) {a = 1, a = 2}\n"), "attribute 'a' given twice"},
      {graphWith("  %y = Relu(%x) {a = [1, \"s\"]}\n"), "mixes strings and numbers"},
      {graphWith("  %y = Relu(%x) {a = []}\n"), "expected ':'"},
      {graphWith("  %y = Relu(%x) {a = 99999999999999999999}\n"), "out of range"},
      {graphWith("  %y = Relu(%x) $\n"), "unexpected character '$'"},
      {graphWith("  %y = Relu(%x) : f32[" + std::string(5000, '-') + "1]\n"),
       "nests deeper than 64 levels"},
      {graphWith("  %y = Relu(%x)\n  return %y, %x\n}\n"), "return has 2 values"},
      {"graph @g() -> (%y: f32[2], %y: f32[2]) {\n  return\n}\n", "output '%y' declared twice"},
      {"graph @g() -> () {\n  return\n}\n}\n", "expected end of input"},
      {"graph @g() -> () {\n", "expected a node or 'return'"},
      {"", "expected 'graph'"},
  };
  for (const Case &c : cases) {
    std::string message = parseError(c.text);
    EXPECT_NE(message.find(c.message), std::string::npos) << c.text << "\n got: " << message;
    EXPECT_EQ(message.rfind("<input>:", 0), 0u) << message;
  }
}

TEST(Parser, MissingFileIsAnError) {
  EXPECT_THROW(parseGraphFile("/nonexistent/graph.onnxir"), Error);
}

// --- round trips ------------------------------------------------------------------

namespace {

// Builds random graphs that exercise every corner of the text form: all
// attribute kinds, all dtypes, odd names, absent operands, multi-result
// nodes, outputs bound to inputs/constants/renamed values, special floats.
class RandomGraphBuilder {
public:
  explicit RandomGraphBuilder(unsigned seed) : rng_(seed) {}

  std::unique_ptr<Graph> build() {
    auto g = std::make_unique<Graph>(pick<std::string>({"main", "torch-jit export", "enc.0"}));
    unsigned numInputs = below(4);
    for (unsigned i = 0; i < numInputs; ++i)
      available_.push_back(g->addInput(freshName(), randomType(true)));
    unsigned numConstants = 1 + below(4);
    for (unsigned i = 0; i < numConstants; ++i)
      available_.push_back(g->addConstant(freshName(), randomTensor()));
    unsigned numNodes = below(8);
    for (unsigned i = 0; i < numNodes; ++i)
      addRandomNode(*g);
    unsigned numOutputs = below(4);
    for (unsigned i = 0; i < numOutputs; ++i) {
      Value *value = available_[below(unsigned(available_.size()))];
      std::string name = below(2) ? value->name() : "renamed " + std::to_string(i);
      bool taken = false;
      for (const GraphOutput &out : g->outputs())
        taken |= out.name == name;
      if (!taken)
        g->addOutput(name, value);
    }
    return g;
  }

private:
  unsigned below(unsigned n) { return unsigned(rng_() % n); }
  template <typename T> T pick(std::vector<T> items) {
    return items[below(unsigned(items.size()))];
  }

  std::string freshName() {
    std::string base = pick<std::string>({"x", "layer.0.w", "/enc/Add_output_", "a b", "q\"uote",
                                          "tab\there", "0lead", "ünï", "_", "back\\slash"});
    return base + std::to_string(nextName_++);
  }

  Dim randomDim() {
    Dim batch = Dim::symbol("batch"), seq = Dim::symbol("seq");
    switch (below(8)) {
    case 0:
      return Dim(int64_t(below(5)));
    case 1:
      return Dim(384);
    case 2:
      return batch;
    case 3:
      return seq * Dim(12);
    case 4:
      return batch * seq;
    case 5:
      return seq + Dim(1);
    case 6:
      return Dim(1) - seq * seq;
    default:
      return Dim::unknown();
    }
  }

  DType randomDType(bool allowUnknown) {
    DType t = DType(below(14));
    return t == DType::Unknown && !allowUnknown ? DType::F32 : t;
  }

  TensorType randomType(bool allowUnknown) {
    TensorType type{randomDType(allowUnknown), Shape()};
    if (below(5) == 0)
      return type;
    std::vector<Dim> dims;
    for (unsigned i = below(4); i > 0; --i)
      dims.push_back(randomDim());
    type.shape = Shape(std::move(dims));
    return type;
  }

  Tensor randomTensor() {
    DType dtype = randomDType(false);
    std::vector<int64_t> dims;
    for (unsigned i = below(3); i > 0; --i)
      dims.push_back(below(5) == 0 ? 0 : 1 + below(below(6) == 0 ? 20 : 4));
    if (below(8) == 0)
      return Tensor::elided(dtype, dims);
    Tensor t(dtype, dims);
    auto *bytes = static_cast<uint8_t *>(t.rawData());
    for (size_t i = 0; i < t.byteSize(); ++i)
      bytes[i] = uint8_t(rng_());
    if (dtype == DType::Bool)
      for (size_t i = 0; i < t.byteSize(); ++i)
        bytes[i] &= 1;
    static const float kSpecial[] = {0.0f,
                                     -0.0f,
                                     1.0f,
                                     0.1f,
                                     1e-12f,
                                     1e-45f,
                                     3.4028235e38f,
                                     std::numeric_limits<float>::infinity(),
                                     -std::numeric_limits<float>::infinity(),
                                     std::numeric_limits<float>::quiet_NaN()};
    if (isFloat(dtype))
      for (int64_t i = 0; i < t.numElements(); ++i)
        if (below(2))
          t.setElementFromDouble(i, kSpecial[below(10)]);
    return t;
  }

  Attribute randomAttribute() {
    auto randomFloat = [&] {
      return pick<float>({0.5f, -0.0f, 1e-5f, 100.0f, 0.17677669f,
                          std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), -1e30f});
    };
    auto randomString = [&] {
      return pick<std::string>({"", "padding", "quote\"d", "new\nline", "\x01\x7f", "ünicode"});
    };
    switch (below(7)) {
    case 0:
      return pick<int64_t>({0, -1, 12, std::numeric_limits<int64_t>::min()});
    case 1:
      return randomFloat();
    case 2:
      return randomString();
    case 3: {
      std::vector<int64_t> v;
      for (unsigned i = below(4); i > 0; --i)
        v.push_back(int64_t(rng_()) - (1ll << 31));
      return v;
    }
    case 4: {
      std::vector<float> v;
      for (unsigned i = below(4); i > 0; --i)
        v.push_back(randomFloat());
      return v;
    }
    case 5: {
      std::vector<std::string> v;
      for (unsigned i = below(3); i > 0; --i)
        v.push_back(randomString());
      return v;
    }
    default:
      return randomTensor();
    }
  }

  void addRandomNode(Graph &g) {
    OpKind kind = OpKind(below(kNumOpKinds));
    // Concat needs an axis valid for its operand, If/Loop/Scan regions that
    // match their operands (ControlFlowTest); not the point here.
    if (kind == OpKind::Concat || isControlFlow(kind))
      kind = OpKind::Sum;
    const OpInfo &info = opInfo(kind);
    int maxOps = info.maxOperands < 0 ? info.minOperands + 3 : info.maxOperands;
    int numOps = info.minOperands + int(below(unsigned(maxOps - info.minOperands + 1)));
    int maxRes = info.maxResults < 0 ? info.minResults + 2 : info.maxResults;
    int numRes = info.minResults + int(below(unsigned(maxRes - info.minResults + 1)));
    std::vector<Value *> operands;
    for (int i = 0; i < numOps; ++i) {
      bool optional = i >= info.minOperands && info.maxOperands >= 0 && i + 1 < numOps;
      operands.push_back(
          optional && below(3) == 0 ? nullptr : available_[below(unsigned(available_.size()))]);
    }
    std::vector<std::string> names;
    for (int i = 0; i < numRes; ++i)
      names.push_back(freshName());
    std::string nodeName = pick<std::string>({"", "/enc/Node", "we\"ird\nname"});
    Node *node = g.createNode(kind, operands, unsigned(numRes), nodeName, names);
    for (unsigned i = below(4); i > 0; --i)
      node->setAttr(pick<std::string>({"alpha", "mode", "value", "a.b", "odd name", "9lead", "_"}),
                    randomAttribute());
    bool typed = below(3) != 0;
    for (Value *result : node->results()) {
      if (typed)
        result->setType(randomType(true));
      available_.push_back(result);
    }
  }

  std::mt19937 rng_;
  std::vector<Value *> available_;
  unsigned nextName_ = 0;
};

// Checks that constants and tensor attributes survived with identical bits.
void expectSameContents(const Graph &a, const Graph &b) {
  ASSERT_EQ(a.constants().size(), b.constants().size());
  for (size_t i = 0; i < a.constants().size(); ++i)
    EXPECT_TRUE(a.constants()[i]->constantValue().identicalTo(b.constants()[i]->constantValue()))
        << a.constants()[i]->name();
  auto nodesA = a.nodeList(), nodesB = b.nodeList();
  ASSERT_EQ(nodesA.size(), nodesB.size());
  for (size_t i = 0; i < nodesA.size(); ++i)
    EXPECT_EQ(nodesA[i]->attributes(), nodesB[i]->attributes()) << nodesA[i]->describe();
}

} // namespace

TEST(RoundTrip, RandomGraphsPrintBackIdentically) {
  PrintOptions defaults, all, named, tight;
  all.printAllConstants = true;
  named.printNodeNames = true;
  tight.maxInlineElements = 0;
  for (unsigned seed = 0; seed < 400; ++seed) {
    std::unique_ptr<Graph> g = RandomGraphBuilder(seed).build();
    ASSERT_NO_THROW(verifyGraph(*g)) << "seed " << seed;
    for (const PrintOptions *options : {&defaults, &all, &named, &tight}) {
      std::string text = printGraphToString(*g, *options);
      std::unique_ptr<Graph> parsed;
      try {
        parsed = parseGraph(text);
      } catch (const Error &e) {
        FAIL() << "seed " << seed << ": " << e.what() << "\n" << text;
      }
      ASSERT_EQ(printGraphToString(*parsed, *options), text) << "seed " << seed;
      ASSERT_NO_THROW(verifyGraph(*parsed)) << "seed " << seed << "\n" << text;
      if (options == &all)
        expectSameContents(*g, *parsed);
    }
  }
}

TEST(RoundTrip, DocumentedExampleIsPrinterOutput) {
  std::ifstream in(std::string(ONNXC_SOURCE_DIR) + "/docs/IR.md");
  std::stringstream doc;
  doc << in.rdbuf();
  std::string text = doc.str();
  size_t start = text.find("```\ngraph @");
  ASSERT_NE(start, std::string::npos);
  start += 4;
  text = text.substr(start, text.find("```", start) - start);
  PrintOptions named;
  named.printNodeNames = true;
  std::unique_ptr<Graph> g = parseGraph(text, "docs/IR.md");
  EXPECT_NO_THROW(verifyGraph(*g));
  EXPECT_EQ(printGraphToString(*g, named), text);
}

TEST(RoundTrip, HandWrittenCorners) {
  const char *text =
      "graph @\"my graph\"(%\"in put\": unknown[*], %x: f32[]) -> (%x: f32[], %renamed: f32[2], "
      "%\"in put\": unknown[*]) {\n"
      "  const %c: f32[2] = dense<[nan, -0.0]>\n"
      "  const %h: f16[3] = dense<[0.5, -inf, 65504.0]>\n"
      "  const %b: bf16[] = dense<-1.5]>\n"
      "  return %x, %c, %\"in put\"\n"
      "}\n";
  EXPECT_NE(parseError(text).find("expected '>'"), std::string::npos);
  std::string fixed = text;
  fixed.replace(fixed.find("-1.5]>"), 6, "-1.5>");
  EXPECT_EQ(roundTrip(fixed), fixed);

  const char *attrs =
      "graph @g(%x: f32[2]) -> (%y: f32[2], %s: unknown[*]) {\n"
      "  %y, %s = Split(%x) {\"a b\" = [] : ints, e = [] : floats, f = [] : strings, "
      "t = dense<[1, 2]> : i64[2], u = dense<elided> : f32[9], v = [1.0, inf, -nan], "
      "w = [\"x\\ty\", \"\\x01\"]} : f32[2], unknown[*]\n"
      "  return %y, %s\n"
      "}\n";
  EXPECT_EQ(roundTrip(attrs), attrs);
}

// --- DOT ----------------------------------------------------------------------------

TEST(DotExport, DrawsEveryOpOnceWithBalancedBraces) {
  std::unique_ptr<Graph> g = parseGraph("graph @g(%x: f32[batch, 64]) -> (%out: f32[batch, 64]) {\n"
                                        "  const %w: f32[64, 64] = dense<elided>\n"
                                        "  const %shape: i64[2] = dense<[-1, 64]>\n"
                                        "  %h = MatMul(%x, %w) : f32[batch, 64]\n"
                                        "  %r = Reshape(%h, %shape) : f32[batch, 64]\n"
                                        "  %t = Transpose(%r) {perm = [0, 1]} : f32[batch, 64]\n"
                                        "  %out = Softmax(%t) {axis = -1} : f32[batch, 64]\n"
                                        "  return %out\n"
                                        "}\n");
  std::ostringstream os;
  exportDot(*g, os);
  std::string dot = os.str();
  EXPECT_EQ(dot.rfind("digraph \"g\" {", 0), 0u);
  for (const char *op : {"MatMul", "Reshape", "Transpose", "Softmax"}) {
    std::string label = std::string("label=\"") + op;
    size_t first = dot.find(label);
    EXPECT_NE(first, std::string::npos) << op;
    EXPECT_EQ(dot.find(label, first + 1), std::string::npos) << op;
  }
  EXPECT_NE(dot.find("perm = [0, 1]"), std::string::npos);
  EXPECT_NE(dot.find("shape=note"), std::string::npos);     // the small constant
  EXPECT_NE(dot.find("w: f32[64, 64]"), std::string::npos); // large one, in MatMul's label
  EXPECT_NE(dot.find("[label=\"f32[batch, 64]\"]"), std::string::npos);
  int depth = 0, quotes = 0;
  for (size_t i = 0; i < dot.size(); ++i) {
    if (dot[i] == '\\') {
      ++i;
      continue;
    }
    if (dot[i] == '"')
      ++quotes;
    else if (quotes % 2 == 0)
      depth += dot[i] == '{' ? 1 : dot[i] == '}' ? -1 : 0;
    ASSERT_GE(depth, 0);
  }
  EXPECT_EQ(depth, 0);
  EXPECT_EQ(quotes % 2, 0);
}
