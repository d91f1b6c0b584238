//===- tests/unit/passes/PassMaskProofTest.cpp - Proving what shape-only masks hide ===//
//
// The symbolic mask evaluator (passes/attention/masks/MaskExpr.h, MaskSymbolic.h) and the
// proof of the band a mask hides at every length (MaskProof.h), through
// proveBandMask on small graphs: bands and windows far wider than any short
// length, stored tables, and the masks that must stay operands, each with
// its reason; and random masks and tables, whose proven bands must agree
// with the reference evaluator at every tested length.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "ir/eval/Evaluator.h"
#include "ir/infer/ShapeInference.h"
#include "ir/text/Parser.h"
#include "passes/attention/masks/AttentionMasks.h"
#include "passes/attention/masks/MaskExpr.h"
#include "passes/attention/masks/MaskSymbolic.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace onnxc;
using namespace onnxc::test;

namespace {

constexpr int64_t kUnbounded = KeyBand::kUnbounded;

/// The positions every mask below starts from: %i [seq, 1] and %j [1, seq],
/// Range over the length read from Shape(%x), x: f32[batch, seq, 8].
const char *kPositions = R"(
  %shape = Shape(%x)
  %len = Gather(%shape, %one) {axis = 0}
  %pos = Range(%zero, %len, %one)
  %i = Unsqueeze(%pos, %axis1)
  %j = Unsqueeze(%pos, %axis0)
)";

const char *kConstants = R"(
  const %zero: i64[] = dense<0>
  const %one: i64[] = dense<1>
  const %axis0: i64[1] = dense<[0]>
  const %axis1: i64[1] = dense<[1]>
  const %fzero: f32[] = dense<0.0>
  const %minus_inf: f32[] = dense<-inf>
)";

struct Proof {
  std::optional<KeyBand> band;
  std::string reason;
};

/// Parses a graph computing %mask (from `constants` and `body` after the
/// positions) and proves what it hides applied to scores [.., seq, seq].
Proof prove(const std::string &constants, const std::string &body, MaskEncoding encoding,
            const std::string &seqDim = "seq") {
  std::ostringstream text;
  // A fixed length comes with a fixed batch: no symbol anywhere.
  std::string batch = Dim::parse(seqDim)->isConstant() ? "2" : "batch";
  text << "graph @mask(%x: f32[" << batch << ", " << seqDim << ", 8]) -> (%mask: unknown[*]) {"
       << kConstants << constants << kPositions << body << "  return %mask\n}\n";
  std::unique_ptr<Graph> g = parseGraph(text.str());
  inferShapes(*g);
  Proof p;
  Dim seq = Dim::parse(seqDim).value();
  p.band = proveBandMask(g->findValue("mask"), encoding, seq, seq, p.reason);
  return p;
}

void expectBand(const Proof &p, int64_t below, int64_t above) {
  ASSERT_TRUE(p.band) << p.reason;
  EXPECT_EQ(p.band->below, below);
  EXPECT_EQ(p.band->above, above);
}

void expectReason(const Proof &p, const std::string &reason) {
  EXPECT_FALSE(p.band);
  EXPECT_EQ(p.reason, reason);
}

/// A stored [n, n] table as a dense literal, element (r, c) = f(r, c).
template <typename F>
std::string table(const std::string &name, const std::string &type, int n, F f) {
  std::ostringstream os;
  os << "  const %" << name << ": " << type << "[" << n << ", " << n << "] = dense<[";
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c)
      os << (r || c ? ", " : "") << f(r, c);
  os << "]>\n";
  return os.str();
}

const char *kSliceToSeq = R"(
  %len_1d = Unsqueeze(%len, %axis0)
  %ends = Concat(%len_1d, %len_1d) {axis = 0}
)";

} // namespace

// --- bands and windows, proven at every length ---------------------------------

TEST(MaskProof, BandWiderThanShortLengthsIsAWindow) {
  Proof p = prove("  const %r: i64[] = dense<120>\n",
                  "  %d = Sub(%i, %j)\n  %dist = Abs(%d)\n  %mask = Greater(%dist, %r)\n",
                  MaskEncoding::HiddenWhereTrue);
  expectBand(p, 120, 120);
}

TEST(MaskProof, BreakpointsFarFromTheDiagonalAreFound) {
  Proof p = prove("  const %r: i64[] = dense<50000>\n",
                  "  %d = Sub(%j, %i)\n  %dist = Abs(%d)\n  %mask = LessOrEqual(%dist, %r)\n",
                  MaskEncoding::HiddenWhereFalse);
  expectBand(p, 50000, 50000);
}

TEST(MaskProof, SlidingCausalWindows) {
  for (int64_t width : {128, 4096}) {
    std::string constants = "  const %w: i64[] = dense<" + std::to_string(width) + ">\n";
    Proof p = prove(constants, R"(
  %future = Greater(%j, %i)
  %age = Sub(%i, %j)
  %old = GreaterOrEqual(%age, %w)
  %mask = Or(%future, %old)
)",
                    MaskEncoding::HiddenWhereTrue);
    expectBand(p, width - 1, 0);
  }
}

TEST(MaskProof, AdditiveWindowWithLowestFloat) {
  Proof p = prove(R"(  const %w: i64[] = dense<4096>
  const %lowest: f32[] = dense<-3.4028235e+38>
)",
                  R"(
  %not_future = LessOrEqual(%j, %i)
  %oldest = Sub(%i, %w)
  %recent = Greater(%j, %oldest)
  %keep = And(%not_future, %recent)
  %mask = Where(%keep, %fzero, %lowest)
)",
                  MaskEncoding::Additive);
  expectBand(p, 4095, 0);
}

TEST(MaskProof, TriluOverMinusInfinityIsCausal) {
  Proof p = prove("", std::string(kSliceToSeq) + R"(
  %full = ConstantOfShape(%ends) {value = dense<[-inf]> : f32[1]}
  %mask = Trilu(%full, %one) {upper = 1}
)",
                  MaskEncoding::Additive);
  expectBand(p, kUnbounded, 0);
}

TEST(MaskProof, StoredTriangleSlicedToTheLength) {
  std::string tril = table("tril", "u8", 8, [](int r, int c) { return c <= r ? 1 : 0; });
  Proof p = prove(tril + "  const %u0: u8[] = dense<0>\n  const %starts: i64[2] = dense<[0, 0]>\n",
                  std::string(kSliceToSeq) + R"(
  %sliced = Slice(%tril, %starts, %ends)
  %mask = Equal(%sliced, %u0)
)",
                  MaskEncoding::HiddenWhereTrue);
  expectBand(p, kUnbounded, 0);
}

TEST(MaskProof, StoredAdditiveBand) {
  std::string band = table("band", "f32", 8,
                           [](int r, int c) { return std::abs(r - c) <= 2 ? "0.0" : "-10000.0"; });
  Proof p = prove(band + "  const %starts: i64[2] = dense<[0, 0]>\n",
                  std::string(kSliceToSeq) + "  %mask = Slice(%band, %starts, %ends)\n",
                  MaskEncoding::Additive);
  expectBand(p, 2, 2);
}

// --- masks that stay operands, with the reason ------------------------------

TEST(MaskProof, StoredTableThatIsNotAFunctionOfTheDistance) {
  std::string odd = table("odd", "f32", 8, [](int r, int c) {
    return (c <= r && !(r == 5 && c == 1)) ? "0.0" : "-10000.0";
  });
  Proof p = prove(odd + "  const %starts: i64[2] = dense<[0, 0]>\n",
                  std::string(kSliceToSeq) + "  %mask = Slice(%odd, %starts, %ends)\n",
                  MaskEncoding::Additive);
  expectReason(p, "a stored mask table is not a function of i - j");
}

TEST(MaskProof, BlockLocalIsNotABand) {
  Proof p = prove("  const %b: i64[] = dense<128>\n", R"(
  %bi = Div(%i, %b)
  %bj = Div(%j, %b)
  %mask = Equal(%bi, %bj)
)",
                  MaskEncoding::HiddenWhereFalse);
  expectReason(p, "the mask depends on the query and key positions, not only on their distance");
}

TEST(MaskProof, LengthDependentMask) {
  Proof p = prove("  const %count: i64[] = dense<128>\n", R"(
  %first = Sub(%len, %count)
  %mask = GreaterOrEqual(%j, %first)
)",
                  MaskEncoding::HiddenWhereFalse);
  expectReason(p, "the mask depends on the sequence length");
}

TEST(MaskProof, ProductOfPositionsIsNotFollowed) {
  // |i - j|^2 <= 100 is a band, but products of positions are not decided.
  Proof p = prove("  const %r: i64[] = dense<100>\n", R"(
  %d = Sub(%i, %j)
  %sq = Mul(%d, %d)
  %mask = LessOrEqual(%sq, %r)
)",
                  MaskEncoding::HiddenWhereFalse);
  expectReason(p, "the mask multiplies two positions");
}

TEST(MaskProof, PeriodicMaskIsNotEventuallyConstant) {
  // (i - j) / 3 * 3 == i - j: every third diagonal, forever.
  Proof p = prove("  const %three: i64[] = dense<3>\n", R"(
  %d = Sub(%i, %j)
  %q = Div(%d, %three)
  %back = Mul(%q, %three)
  %mask = Equal(%back, %d)
)",
                  MaskEncoding::HiddenWhereFalse);
  expectReason(p, "the mask divides a distance by a constant that does not divide it");
}

TEST(MaskProof, IntegerOverflowIsNotProvable) {
  Proof p = prove("  const %big: i64[] = dense<4398046511104>\n  const %r: i64[] = dense<3>\n",
                  R"(
  %d = Sub(%i, %j)
  %scaled = Mul(%d, %big)
  %big_r = Mul(%r, %big)
  %mask = Greater(%scaled, %big_r)
)",
                  MaskEncoding::HiddenWhereTrue);
  expectReason(p, "the mask's integer arithmetic may overflow its type");
}

TEST(MaskProof, ComparisonsOfFormsThatMayWrapAreNotFolded) {
  // (i - j) + big < (i - j) + big - 1 is false in exact integers, but the
  // graph wraps the left side once i - j > 10 and then hides those keys.
  Proof p = prove("  const %big: i64[] = dense<9223372036854775797>\n", R"(
  %d = Sub(%i, %j)
  %a = Add(%d, %big)
  %b0 = Add(%d, %big)
  %b = Sub(%b0, %one)
  %mask = Less(%a, %b)
)",
                  MaskEncoding::HiddenWhereTrue);
  expectReason(p, "the mask's integer arithmetic may overflow its type");
}

TEST(MaskProof, DiagonalHiddenOrUnsupportedOpOrData) {
  expectReason(prove("", "  %mask = Less(%j, %i)\n", MaskEncoding::HiddenWhereFalse),
               "the mask hides the diagonal");
  expectReason(prove("  const %two: i64[] = dense<2>\n", R"(
  %d = Sub(%i, %j)
  %m = Mod(%d, %two)
  %mask = Equal(%m, %zero)
)",
                     MaskEncoding::HiddenWhereFalse),
               "Mod is not followed in masks");
  expectReason(prove("", R"(
  %first = ReduceSum(%x)
  %mask = Less(%first, %fzero)
)",
                     MaskEncoding::HiddenWhereTrue),
               "mask depends on input data");
}

TEST(MaskProof, MaskVaryingOverBatch) {
  Proof p = prove("  const %axes12: i64[2] = dense<[1, 2]>\n", R"(
  %b = Gather(%shape, %zero) {axis = 0}
  %bpos = Range(%zero, %b, %one)
  %b3 = Unsqueeze(%bpos, %axes12)
  %diff = Sub(%i, %j)
  %shifted = Add(%diff, %b3)
  %mask = Less(%shifted, %zero)
)",
                  MaskEncoding::HiddenWhereTrue);
  expectReason(p, "the mask varies over batch or heads");
}

TEST(MaskProof, FixedLengthEvaluatesOnce) {
  // Mod is not followed symbolically, but at the one length 6 the concrete
  // evaluation is the whole truth: |i - j| mod 7 = |i - j| there.
  const char *body = R"(
  %d = Sub(%i, %j)
  %dist = Abs(%d)
  %m = Mod(%dist, %seven)
  %mask = Greater(%m, %r)
)";
  const char *constants = "  const %r: i64[] = dense<2>\n  const %seven: i64[] = dense<7>\n";
  expectBand(prove(constants, body, MaskEncoding::HiddenWhereTrue, "6"), 2, 2);
  expectReason(prove(constants, body, MaskEncoding::HiddenWhereTrue),
               "Mod is not followed in masks");
}

TEST(MaskProof, BreakpointsTooFarAreNotDecided) {
  Proof p = prove("  const %r: i64[] = dense<4194304>\n",
                  "  %d = Sub(%i, %j)\n  %dist = Abs(%d)\n  %mask = Greater(%dist, %r)\n",
                  MaskEncoding::HiddenWhereTrue);
  expectReason(p, "the mask changes further than 2^21 positions from the diagonal");
}

// --- the expression algebra -------------------------------------------------

TEST(MaskExpr, ShapeArithmeticFoldsToDims) {
  using namespace onnxc::mask;
  Dim seq = Dim::symbol("seq");
  ExprPtr s = integer(DType::I64, Affine::ofDim(seq));
  ExprPtr minusOne = integer(DType::I64, Affine::constant(-1));
  // seq == -1 is false and seq + 1 > 0 true: symbols are dimensions.
  EXPECT_EQ(constantValue(binary(ExprKind::Equal, s, minusOne)), 0.0);
  ExprPtr next = binary(ExprKind::Add, s, integer(DType::I64, Affine::constant(1)));
  EXPECT_EQ(constantValue(binary(ExprKind::Less, minusOne, next)), 1.0);
  // seq - seq folds to 0; seq < seq + 1 holds.
  EXPECT_EQ(dimValue(binary(ExprKind::Sub, s, s)), Dim(0));
  // x0 - x1 + seq with x0 := x1 + 2 is seq + 2.
  Affine form = Affine::variable(0) - Affine::variable(1) + Affine::ofDim(seq);
  Affine shifted = Affine::variable(1) + Affine::constant(2);
  Affine r = substitute(form, {shifted, Affine::variable(1)});
  EXPECT_FALSE(r.hasVariables());
  EXPECT_EQ(r.offset, seq + Dim(2));
  EXPECT_EQ(form.str(), "x0 - x1 + seq");
}

TEST(MaskExpr, CheckedArithmeticRefusesOverflow) {
  using namespace onnxc::mask;
  Affine huge{{{0, int64_t(1) << 62}}, Dim(0)};
  EXPECT_THROW(scaled(huge, 4), NotProvable);
  EXPECT_THROW(huge + huge, NotProvable);
  // Dims with huge coefficients are not combined either.
  Dim big = Dim::symbol("seq") * Dim(int64_t(1) << 40);
  EXPECT_THROW(addDims(big, Dim::symbol("batch")), NotProvable);
}

TEST(MaskSymbolic, ShapeChainsAndTableSlices) {
  std::unique_ptr<Graph> g = parseGraph(R"(
graph @chain(%x: f32[batch, seq, 8]) -> (%mask: unknown[*]) {
  const %one: i64[] = dense<1>
  const %axis0: i64[1] = dense<[0]>
  const %starts: i64[2] = dense<[0, 0]>
  const %table: f32[4, 4] = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]>
  %shape = Shape(%x)
  %len = Gather(%shape, %one) {axis = 0}
  %len_1d = Unsqueeze(%len, %axis0)
  %ends = Concat(%len_1d, %len_1d) {axis = 0}
  %mask = Slice(%table, %starts, %ends)
  return %mask
}
)");
  inferShapes(*g);
  mask::SymbolicEvaluator evaluator;
  EXPECT_EQ(mask::SymbolicEvaluator::contents(evaluator.evaluate(g->findValue("ends"))),
            (std::vector<Dim>{sym("seq"), sym("seq")}));
  const mask::SymbolicTensor &sliced = evaluator.evaluate(g->findValue("mask"));
  EXPECT_EQ(sliced.dims, (std::vector<Dim>{sym("seq"), sym("seq")}));
  EXPECT_TRUE(sliced.assumesInTable);
  // Its contents are never read as numbers (past the table they differ).
  EXPECT_THROW(mask::SymbolicEvaluator::contents(sliced), mask::NotProvable);
}

// --- the proof is never wrong: random masks against the reference evaluator -----

namespace {

/// Writes random integer and bool expressions over %i, %j and the length as
/// IR lines (every value broadcasts to [seq, seq]).
class RandomMask {
public:
  explicit RandomMask(unsigned seed) : state_(seed * 2654435761u + 1) {}

  std::string build() {
    body_.clear();
    constants_.clear();
    counter_ = 0;
    std::string root = boolean(3);
    body_ += "  %mask = Identity(" + root + ")\n";
    return constants_ + "@@" + body_;
  }

private:
  unsigned next(unsigned bound) {
    state_ = state_ * 1103515245u + 12345u;
    return (state_ >> 8) % bound;
  }
  std::string fresh() { return "%t" + std::to_string(counter_++); }
  std::string constant(int64_t value) {
    std::string name = "%c" + std::to_string(counter_++);
    constants_ += "  const " + name + ": i64[] = dense<" + std::to_string(value) + ">\n";
    return name;
  }
  std::string emit(const std::string &op, const std::vector<std::string> &operands) {
    std::string name = fresh();
    body_ += "  " + name + " = " + op + "(";
    for (size_t k = 0; k < operands.size(); ++k)
      body_ += (k ? ", " : "") + operands[k];
    body_ += ")\n";
    return name;
  }
  std::string integer(int depth) {
    unsigned pick = depth <= 0 ? next(3) : next(12);
    switch (pick) {
    case 0:
      // Mostly distances (what bands are made of), sometimes a lone position.
      if (next(4) == 0)
        return next(2) ? "%i" : "%j";
      return next(2) ? emit("Sub", {"%i", "%j"}) : emit("Sub", {"%j", "%i"});
    case 1:
      return constant(int64_t(next(301)) - 150);
    case 2:
      return next(8) ? emit("Sub", {"%i", "%j"}) : "%len"; // now and then the length
    case 3:
    case 4:
      return emit("Sub", {integer(depth - 1), integer(depth - 1)});
    case 5:
      return emit("Add", {integer(depth - 1), integer(depth - 1)});
    case 6:
      return emit("Abs", {integer(depth - 1)});
    case 7:
      return emit("Mul", {integer(depth - 1), constant(int64_t(next(7)) - 3)});
    case 8:
      return emit("Div", {integer(depth - 1), constant(int64_t(next(4)) + 1)});
    case 9:
      return emit(next(2) ? "Min" : "Max", {integer(depth - 1), integer(depth - 1)});
    case 10:
      return emit("Neg", {integer(depth - 1)});
    default:
      return emit("Where", {boolean(depth - 1), integer(depth - 1), integer(depth - 1)});
    }
  }
  std::string boolean(int depth) {
    static const char *comparisons[] = {"Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                                        "Equal"};
    unsigned pick = depth <= 0 ? 0 : next(6);
    switch (pick) {
    case 0:
    case 1:
    case 2:
      return emit(comparisons[next(5)], {integer(depth - 1), integer(depth - 1)});
    case 3:
      return emit(next(2) ? "And" : "Or", {boolean(depth - 1), boolean(depth - 1)});
    case 4:
      return emit("Not", {boolean(depth - 1)});
    default:
      return emit("Xor", {boolean(depth - 1), boolean(depth - 1)});
    }
  }

  uint32_t state_;
  std::string constants_, body_;
  int counter_ = 0;
};

/// Whether the reference evaluator's mask at length n hides exactly what
/// `band` says; the first disagreement otherwise.
std::string checkAtLength(const Graph &g, const KeyBand &band, int64_t n) {
  std::map<std::string, Tensor> inputs = {{"x", Tensor(DType::F32, {1, n, 8})}};
  std::vector<Tensor> outputs = evaluateGraph(g, inputs);
  const Tensor &mask = outputs.at(0);
  std::vector<int64_t> dims = mask.dims();
  while (dims.size() < 2)
    dims.insert(dims.begin(), 1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t flat = (dims[0] == 1 ? 0 : i) * dims[1] + (dims[1] == 1 ? 0 : j);
      bool hidden = mask.elementAsDouble(flat) != 0;
      bool visible = i - j <= band.below && j - i <= band.above;
      if (hidden == visible)
        return "at length " + std::to_string(n) + ", (" + std::to_string(i) + ", " +
               std::to_string(j) + ") is " + (hidden ? "hidden" : "visible");
    }
  return "";
}

} // namespace

TEST(MaskProof, RandomMasksAgreeWithTheReferenceAtEveryTestedLength) {
  int proven = 0, attempts = 400;
  for (int seed = 0; seed < attempts; ++seed) {
    std::string parts = RandomMask(unsigned(seed)).build();
    size_t split = parts.find("@@");
    std::string constants = parts.substr(0, split), body = parts.substr(split + 2);
    std::ostringstream text;
    text << "graph @mask(%x: f32[batch, seq, 8]) -> (%mask: unknown[*]) {" << kConstants
         << constants << kPositions << body << "  return %mask\n}\n";
    std::unique_ptr<Graph> g = parseGraph(text.str());
    inferShapes(*g);
    std::string reason;
    Dim seq = sym("seq");
    std::optional<KeyBand> band =
        proveBandMask(g->findValue("mask"), MaskEncoding::HiddenWhereTrue, seq, seq, reason);
    if (!band)
      continue;
    ++proven;
    for (int64_t n : {1, 2, 7, 130, 311}) {
      std::string disagreement = checkAtLength(*g, *band, n);
      ASSERT_EQ(disagreement, "") << "seed " << seed << ": band [" << band->below << ", "
                                  << band->above << "]\n"
                                  << text.str();
    }
  }
  // Enough of them are bands for the check to mean something.
  EXPECT_GE(proven, attempts / 10);
}

TEST(MaskProof, RandomStoredTablesAgreeWithTheReference) {
  int proven = 0, attempts = 200;
  uint32_t state = 7;
  auto next = [&](unsigned bound) {
    state = state * 1103515245u + 12345u;
    return int((state >> 8) % bound);
  };
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const int n = 12;
    int below = next(14) - 1, above = next(14) - 1;
    int flipRow = next(3) == 0 ? next(n) : -1, flipColumn = next(n);
    std::string tril = table("t", "u8", n, [&](int r, int c) {
      bool hidden = r - c > below || c - r > above;
      return (hidden != (r == flipRow && c == flipColumn)) ? 1 : 0;
    });
    std::ostringstream text;
    text << "graph @mask(%x: f32[batch, seq, 8]) -> (%mask: unknown[*]) {" << kConstants << tril
         << "  const %u0: u8[] = dense<0>\n  const %starts: i64[2] = dense<[0, 0]>\n"
         << kPositions << kSliceToSeq
         << "  %sliced = Slice(%t, %starts, %ends)\n  %mask = Greater(%sliced, %u0)\n"
         << "  return %mask\n}\n";
    std::unique_ptr<Graph> g = parseGraph(text.str());
    inferShapes(*g);
    std::string reason;
    Dim seq = sym("seq");
    std::optional<KeyBand> band =
        proveBandMask(g->findValue("mask"), MaskEncoding::HiddenWhereTrue, seq, seq, reason);
    if (!band)
      continue;
    ++proven;
    for (int64_t length = 1; length <= n; ++length)
      ASSERT_EQ(checkAtLength(*g, *band, length), "") << text.str();
  }
  EXPECT_GE(proven, attempts / 4);
}

// Scores [.., seq, past+seq] after a KV cache: the queries are the last seq
// positions. A mask hiding j > i + past is causal around that offset
// diagonal at every past and seq; a triangle aligned top-left (j > i) is
// not (what it hides depends on past).
Proof proveAfterCache(const std::string &hiddenWhen) {
  std::string text = std::string("graph @mask(%x: f32[batch, seq, 8], %cache: f32[batch, past, 8]) "
                                 "-> (%mask: unknown[*]) {") +
                     kConstants + R"(
  %all = Concat(%cache, %x) {axis = 1}
  %x_shape = Shape(%x)
  %q_len = Gather(%x_shape, %one) {axis = 0}
  %all_shape = Shape(%all)
  %kv_len = Gather(%all_shape, %one) {axis = 0}
  %past = Sub(%kv_len, %q_len)
  %q_pos = Range(%zero, %q_len, %one)
  %i = Unsqueeze(%q_pos, %axis1)
  %at = Add(%i, %past)
  %kv_pos = Range(%zero, %kv_len, %one)
  %j = Unsqueeze(%kv_pos, %axis0)
  %mask = Greater(%j, )" +
                     hiddenWhen +
                     R"()
  return %mask
}
)";
  std::unique_ptr<Graph> g = parseGraph(text);
  inferShapes(*g);
  Proof p;
  p.band = proveBandMask(g->findValue("mask"), MaskEncoding::HiddenWhereTrue, Dim::symbol("seq"),
                         g->findValue("all")->shape()[1], p.reason);
  return p;
}

TEST(MaskProof, BandAfterAKvCacheIsAroundTheOffsetDiagonal) {
  expectBand(proveAfterCache("%at"), kUnbounded, 0);
  Proof topLeft = proveAfterCache("%i");
  EXPECT_FALSE(topLeft.band);
  EXPECT_FALSE(topLeft.reason.empty());
}
