//===- tests/unit/passes/AttentionMaskFillTest.cpp - Finite mask fills, fused -----===//
//
// Exported attention whose masks fill a finite value (HF DistilBERT's
// masked_fill(mask == 0, finfo.min), GPT-2's Where(causal, w, finfo.min)
// followed by an additive (1 - mask) * finfo.min) fuses into an Attention
// with mask_fill, and must mean exactly what the unfused graph does: a row
// hiding every key is uniform with a finite fill and NaN with -inf, and a
// hidden key counts when the visible scores are near the fill (-1e4 here).
// Each case runs the unfused graph through the reference evaluator and the
// fused graph through the reference, the compiled fused kernel and the
// compiled per-row kernel, on a batch whose first sequence is fully masked,
// second left-padded and third unmasked, at lengths 1 to 200 (around the
// fused kernel's 24-row block and 128-key tile). Also the mask orders
// fuse-attention must refuse, with their --explain reason.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"
#include "TestUtil.h"

#include "ir/text/Printer.h"
#include "passes/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

namespace onnxc {
namespace {

using lowertest::parseGraph;
using lowertest::randomOf;
using lowertest::runCompiled;
using lowertest::runReference;

using Feeds = std::map<std::string, Tensor>;

constexpr float kFinfoMin = -std::numeric_limits<float>::max();
constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kBatch = 3, kHeads = 2, kHeadSize = 16;

enum class Padding { None, BoolWhere, Additive };

struct MaskCase {
  float fill;
  bool causal;
  Padding padding;
};

std::string fillText(float fill) {
  if (std::isinf(fill))
    return "-inf";
  std::ostringstream os;
  os.precision(9);
  os << fill;
  return os.str();
}

std::string describe(const MaskCase &c) {
  const char *padding[] = {"no padding", "bool Where padding", "additive padding"};
  return std::string("fill ") + fillText(c.fill) + (c.causal ? ", causal Where, " : ", ") +
         padding[int(c.padding)];
}

const char *kHeader =
    R"(graph @g(%q: f32[b, 2, s, 16], %k: f32[b, 2, s, 16], %v: f32[b, 2, s, 16], %keep: bool[b, s]) -> (%y: f32[b, 2, s, 16]) {
  const %c: f32[] = dense<0.25>
  const %zero: i64[] = dense<0>
  const %one: i64[] = dense<1>
  const %two: i64[] = dense<2>
  const %axis0: i64[1] = dense<[0]>
  const %axis1: i64[1] = dense<[1]>
  const %axes12: i64[2] = dense<[1, 2]>
  const %fzero: f32[] = dense<0.0>
)";

/// The attention as exported: scores, the causal Where (future keys take
/// the fill), then the padding (a Where, or an Add of Where(keep, 0, fill)).
std::string unfusedText(const MaskCase &c) {
  std::ostringstream g;
  g << kHeader << "  const %fill: f32[] = dense<" << fillText(c.fill) << ">\n";
  g << "  %kt = Transpose(%k) {perm = [0, 1, 3, 2]}\n"
       "  %s0 = MatMul(%q, %kt)\n"
       "  %s1 = Mul(%s0, %c)\n"
       "  %keep4 = Unsqueeze(%keep, %axes12)\n";
  std::string scores = "%s1";
  if (c.causal) {
    g << "  %shape = Shape(%q)\n"
         "  %len = Gather(%shape, %two) {axis = 0}\n"
         "  %pos = Range(%zero, %len, %one)\n"
         "  %i = Unsqueeze(%pos, %axis1)\n"
         "  %j = Unsqueeze(%pos, %axis0)\n"
         "  %future = Greater(%j, %i)\n"
         "  %s2 = Where(%future, %fill, %s1)\n";
    scores = "%s2";
  }
  if (c.padding == Padding::BoolWhere) {
    g << "  %s3 = Where(%keep4, " << scores << ", %fill)\n";
    scores = "%s3";
  } else if (c.padding == Padding::Additive) {
    g << "  %additive = Where(%keep4, %fzero, %fill)\n"
         "  %s3 = Add("
      << scores << ", %additive)\n";
    scores = "%s3";
  }
  g << "  %p = Softmax(" << scores << ") {axis = -1}\n"
    << "  %y = MatMul(%p, %v)\n  return %y\n}\n";
  return g.str();
}

/// The same attention written as one Attention op with mask_fill, which
/// also returns qk_matmul_output: reading it sends the op to the per-row
/// kernel of AttentionLowering.cpp instead of the fused one.
std::string perRowText(const MaskCase &c) {
  std::ostringstream g;
  std::string header = kHeader;
  header.replace(header.find("-> (%y: f32[b, 2, s, 16])"), 25,
                 "-> (%y: f32[b, 2, s, 16], %qk: f32[b, 2, s, s])");
  g << header << "  const %fill: f32[] = dense<" << fillText(c.fill) << ">\n";
  g << "  %keep4 = Unsqueeze(%keep, %axes12)\n";
  std::string mask;
  if (c.padding == Padding::BoolWhere) {
    mask = ", %keep4";
  } else if (c.padding == Padding::Additive) {
    g << "  %additive = Where(%keep4, %fzero, %fill)\n";
    mask = ", %additive";
  }
  g << "  %y, %pk, %pv, %qk = Attention(%q, %k, %v" << mask << ") {scale = 0.25";
  if (c.causal)
    g << ", is_causal = 1";
  if (!std::isinf(c.fill) && (c.causal || c.padding == Padding::BoolWhere))
    g << ", mask_fill = " << fillText(c.fill);
  g << "}\n  return %y, %qk\n}\n";
  return g.str();
}

/// `text` after fuse-attention and dce; `explained` gets the pass's
/// --explain lines.
std::unique_ptr<Graph> fused(const std::string &text, std::string *explained = nullptr) {
  std::unique_ptr<Graph> graph = parseGraph(text);
  PassManagerOptions options;
  options.explain = true;
  PassManager pm(options);
  pm.addPass("fuse-attention");
  pm.addPass("dce");
  pm.run(*graph);
  if (explained)
    for (const std::string &line : pm.context("fuse-attention")->explanations())
      *explained += line + "\n";
  return graph;
}

const Node *findAttention(const Graph &graph) {
  for (const Node *node : graph.nodeList())
    if (node->kind() == OpKind::Attention)
      return node;
  return nullptr;
}

/// keep[b][j]: sequence 0 hides every key, sequence 1 is left-padded (its
/// first third hidden), sequence 2 sees every key.
Tensor keepMask(int64_t seq) {
  Tensor keep(DType::Bool, {kBatch, seq});
  for (int64_t j = 0; j < seq; ++j) {
    keep.setElementFromDouble(0 * seq + j, 0.0);
    keep.setElementFromDouble(1 * seq + j, j >= (seq + 2) / 3 ? 1.0 : 0.0);
    keep.setElementFromDouble(2 * seq + j, 1.0);
  }
  return keep;
}

/// Q and K whose scaled scores 0.25 q.k lie within about 4 of `center`
/// (q near -a, k near a with 0.25 * 16 * -a^2 = center), or ordinary random
/// ones for center 0.
Feeds feeds(int64_t seq, unsigned seed, double center) {
  std::vector<int64_t> dims = {kBatch, kHeads, seq, kHeadSize};
  Feeds f;
  if (center == 0) {
    f["q"] = randomOf(DType::F32, dims, seed, -3, 3);
    f["k"] = randomOf(DType::F32, dims, seed + 1, -3, 3);
  } else {
    // 0.25 * 16 * a * b = center with a = -b: |a| = sqrt(-center / 4).
    double a = std::sqrt(-center / 4.0);
    f["q"] = randomOf(DType::F32, dims, seed, -a - 0.01, -a + 0.01);
    f["k"] = randomOf(DType::F32, dims, seed + 1, a - 0.01, a + 0.01);
  }
  f["v"] = randomOf(DType::F32, dims, seed + 2);
  f["keep"] = keepMask(seq);
  return f;
}

/// Expects `actual` to match `expected` within atol + rtol |e|, NaN for NaN.
void expectSame(const Tensor &expected, const Tensor &actual, double rtol, double atol,
                const std::string &what) {
  ASSERT_EQ(expected.dims(), actual.dims()) << what;
  int reported = 0;
  for (int64_t i = 0; i < expected.numElements() && reported < 5; ++i) {
    double e = expected.elementAsDouble(i), a = actual.elementAsDouble(i);
    bool ok = std::isnan(e) ? std::isnan(a)
                            : !std::isnan(a) && std::abs(a - e) <= atol + rtol * std::abs(e);
    if (!ok) {
      ++reported;
      ADD_FAILURE() << what << ": element " << i << " is " << a << ", expected " << e;
    }
  }
}

bool anyNaN(const Tensor &t) {
  for (int64_t i = 0; i < t.numElements(); ++i)
    if (std::isnan(t.elementAsDouble(i)))
      return true;
  return false;
}

void checkCase(const MaskCase &c, int64_t seq, double center, double atol) {
  SCOPED_TRACE(describe(c) + ", " + std::to_string(seq) + " keys, scores near " +
               std::to_string(center));
  std::string text = unfusedText(c);
  std::unique_ptr<Graph> plain = parseGraph(text);
  std::string explained;
  std::unique_ptr<Graph> graph = fused(text, &explained);
  const Node *attention = findAttention(*graph);
  ASSERT_NE(attention, nullptr) << "not fused: " << explained;
  // Only a Where on the scores fills; an additive mask alone just adds.
  bool fills = !std::isinf(c.fill) && (c.causal || c.padding == Padding::BoolWhere);
  EXPECT_EQ(attention->hasAttr("mask_fill"), fills);
  if (fills) {
    EXPECT_EQ(attention->getFloat("mask_fill", 0.0f), c.fill);
  }
  EXPECT_EQ(attention->getInt("is_causal", 0), c.causal ? 1 : 0);
  std::unique_ptr<Graph> perRow = parseGraph(perRowText(c));

  Feeds in = feeds(seq, unsigned(seq) * 7 + 1, center);
  Tensor expected = runReference(*plain, in)[0];
  expectSame(expected, runReference(*graph, in)[0], 1e-4, atol, "fused, reference");
  expectSame(expected, runCompiled(*graph, in)[0], 1e-4, atol, "fused, compiled");
  expectSame(expected, runCompiled(*perRow, in)[0], 1e-4, atol, "per-row kernel, compiled");
  // The unfused graph's NaNs are where the fill is -inf and a row hides
  // every key (the first sequence has one whenever it is masked).
  bool hidesRows = c.padding != Padding::None;
  EXPECT_EQ(anyNaN(expected), std::isinf(c.fill) && hidesRows);
}

TEST(AttentionMaskFill, FusedMatchesUnfusedOnFullyMaskedRows) {
  for (float fill : test::sweep({kMinusInf, kFinfoMin, -1e9f, -1e4f}))
    for (bool causal : {false, true})
      for (Padding padding : {Padding::None, Padding::BoolWhere, Padding::Additive})
        for (int64_t seq : test::sweep<int64_t>({1, 30, 128, 200})) {
          // s - 1e4 holds s to 2^-10 in f32: a row hidden by an additive
          // -1e4 is softmax(s) with weights rounded by 5e-4.
          double atol = fill == -1e4f ? 1e-3 : 1e-5;
          checkCase({fill, causal, padding}, seq, 0.0, atol);
        }
}

TEST(AttentionMaskFill, HiddenKeysCountWhenScoresAreNearTheFill) {
  // Scores near -1e4 and a fill of -1e4: a hidden key weighs as much as a
  // visible one. f32 scores there are 1e-3 apart, so the tolerance is wide;
  // dropping the hidden keys would move the outputs by tenths.
  for (bool causal : {false, true})
    for (Padding padding : {Padding::None, Padding::BoolWhere, Padding::Additive}) {
      if (!causal && padding == Padding::None)
        continue;
      for (int64_t seq : {5, 30, 130})
        checkCase({-1e4f, causal, padding}, seq, -1e4, 2e-3);
    }
}

TEST(AttentionMaskFill, TheFillChangesTheResult) {
  // The test above can fail: with the hidden keys dropped (fill -inf) the
  // left-padded and causal rows differ from the -1e4 fill's by far more
  // than its tolerance.
  MaskCase finite{-1e4f, true, Padding::BoolWhere}, dropped{kMinusInf, true, Padding::BoolWhere};
  Feeds in = feeds(30, 5, -1e4);
  Tensor a = runReference(*parseGraph(unfusedText(finite)), in)[0];
  Tensor b = runCompiled(*fused(unfusedText(dropped)), in)[0];
  double largest = 0;
  for (int64_t i = 2 * kHeads * 30 * kHeadSize; i < a.numElements(); ++i) // sequence 2
    largest = std::max(largest, std::abs(a.elementAsDouble(i) - b.elementAsDouble(i)));
  EXPECT_GT(largest, 0.05);
}

TEST(AttentionMaskFill, PerQueryMasksInTheFusedKernel) {
  // A mask that differs per query row ([b, 1, s, s], gathered per lane):
  // rows 3 and 17 of each sequence hide every key, the others a random
  // half, with is_causal and a fill the scores are near (-1e4) or far from
  // (finfo.min). Compiled against the reference of the same op.
  for (const char *type : {"f32", "bool"})
    for (float fill : {kFinfoMin, -1e4f})
      for (int64_t seq : {30, 200}) {
        SCOPED_TRACE(std::string(type) + " mask, fill " + fillText(fill) + ", " +
                     std::to_string(seq) + " keys");
        std::ostringstream g;
        g << "graph @g(%q: f32[b, 2, s, 16], %k: f32[b, 2, s, 16], %v: f32[b, 2, s, 16], %m: "
          << type << "[b, 1, s, s]) -> (%y: f32[b, 2, s, 16]) {\n"
          << "  %y = Attention(%q, %k, %v, %m) {is_causal = 1, mask_fill = " << fillText(fill)
          << ", scale = 0.25}\n  return %y\n}\n";
        std::unique_ptr<Graph> graph = parseGraph(g.str());
        Feeds in = feeds(seq, 11, fill == kFinfoMin ? 0.0 : -1e4);
        bool isBool = std::string(type) == "bool";
        Tensor mask = randomOf(isBool ? DType::Bool : DType::F32, {kBatch, 1, seq, seq}, 3);
        for (int64_t i = 0; i < mask.numElements(); ++i) {
          int64_t row = i / seq % seq;
          bool hidden = row == 3 || row == 17 || mask.elementAsDouble(i) < 0;
          if (isBool)
            mask.setElementFromDouble(i, hidden ? 0.0 : 1.0);
          else
            mask.setElementFromDouble(i, hidden ? fill : 0.0);
        }
        in.erase("keep");
        in["m"] = mask;
        double atol = fill == kFinfoMin ? 1e-5 : 2e-3;
        expectSame(runReference(*graph, in)[0], runCompiled(*graph, in)[0], 1e-4, atol, "compiled");
      }
}

/// The reason fuse-attention gives for not fusing `text`, or "" if it did.
std::string rejection(const std::string &text) {
  std::string explained;
  std::unique_ptr<Graph> graph = fused(text, &explained);
  return findAttention(*graph) ? "" : explained;
}

TEST(AttentionMaskFill, RefusesMaskOrdersItCannotExpress) {
  // Add(padding) then Where(causal, finite fill): the Where overwrites the
  // padding on future keys, which the fused op would add to its fill.
  std::string addThenWhere = unfusedText({kFinfoMin, false, Padding::Additive});
  size_t softmax = addThenWhere.find("  %p = Softmax(%s3)");
  addThenWhere.replace(softmax, std::string("  %p = Softmax(%s3)").size(),
                       "  %shape = Shape(%q)\n  %len = Gather(%shape, %two) {axis = 0}\n"
                       "  %pos = Range(%zero, %len, %one)\n  %i = Unsqueeze(%pos, %axis1)\n"
                       "  %j = Unsqueeze(%pos, %axis0)\n  %future = Greater(%j, %i)\n"
                       "  %s4 = Where(%future, %fill, %s3)\n  %p = Softmax(%s4)");
  EXPECT_NE(rejection(addThenWhere).find("follows the additive mask"), std::string::npos)
      << rejection(addThenWhere);

  // Two Where masks with different fills: the causal one -inf, the padding
  // one finfo.min.
  std::string twoFills = unfusedText({kFinfoMin, true, Padding::BoolWhere});
  size_t where = twoFills.find("%s2 = Where(%future, %fill, %s1)");
  twoFills.replace(where, std::string("%s2 = Where(%future, %fill, %s1)").size(),
                   "%s2 = Where(%future, %ninf, %s1)");
  twoFills.insert(twoFills.find("  %kt ="), "  const %ninf: f32[] = dense<-inf>\n");
  EXPECT_NE(rejection(twoFills).find("fill different values"), std::string::npos)
      << rejection(twoFills);

  // Where(causal, finite) then Add(padding), GPT-2's order, fuses.
  EXPECT_EQ(rejection(unfusedText({kFinfoMin, true, Padding::Additive})), "");
}

TEST(AttentionMaskFill, AttributeRoundTripsThroughTheTextForm) {
  std::unique_ptr<Graph> graph = fused(unfusedText({kFinfoMin, true, Padding::Additive}));
  std::string first = printGraphToString(*graph);
  std::unique_ptr<Graph> again = parseGraph(first);
  EXPECT_EQ(printGraphToString(*again), first);
  EXPECT_NE(first.find("mask_fill = "), std::string::npos) << first;
  EXPECT_EQ(findAttention(*again)->getFloat("mask_fill", 0.0f), kFinfoMin);
}

} // namespace
} // namespace onnxc
