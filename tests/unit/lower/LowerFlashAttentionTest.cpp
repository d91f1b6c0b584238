//===- tests/unit/lower/LowerFlashAttentionTest.cpp - The fused attention kernel ===//
//
// The f32 fast path of Attention (codegen/lower/attention/FlashAttentionLowering.cpp)
// against the reference evaluator, at both vector widths (8 lanes with
// AVX-512 turned off; 16 lanes where the host has AVX-512F): 3-D and 4-D
// layouts, equal and grouped heads, head sizes 12/16/20/32/64/80/128, no
// mask, causal, window, causal+window, additive and bool masks (padding
// [b,1,1,S], full [S,S], short), cross-attention with Sq != Skv, sequence
// lengths off the 24- and 32-row blocks and the 128-key tile, S = 1, grouped
// heads of a decode step on paired lanes, fully
// masked rows (NaN like the reference), score ranges far beyond the exp's
// -60 floor, and two threads. Also which cases take the fast path, which
// width the kernel is emitted at, and the general path's `window`.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"
#include "TestUtil.h"

#include "codegen/TargetSelection.h"
#include "codegen/lower/Lowering.h"

#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace onnxc {
namespace {

using lowertest::GraphText;
using lowertest::parseGraph;
using lowertest::randomOf;

using Feeds = std::map<std::string, Tensor>;

std::string str(int64_t value) { return std::to_string(value); }

/// The targets the kernel is checked on: 8 lanes (AVX-512 off) and, on an
/// AVX-512F host, 16 lanes (ModelCompiler's choice there).
std::vector<std::pair<std::string, TargetRequest>> widths() {
  std::vector<std::pair<std::string, TargetRequest>> list = {{"8 lanes", {"native", "-avx512f"}}};
  if (TargetSelection::select({}).hasFeature("avx512f"))
    list.push_back({"16 lanes", {"native", ""}});
  return list;
}

/// lowertest::expectCompiledMatchesReference at every width of widths().
void expectCompiledMatchesReference(const Graph &graph, const Feeds &feeds, double rtol = 1e-4,
                                    double atol = 1e-6, int threads = 1) {
  for (const auto &[name, request] : widths()) {
    SCOPED_TRACE(name);
    lowertest::ScopedTarget target(request);
    lowertest::expectCompiledMatchesReference(graph, feeds, rtol, atol, threads);
  }
}

/// Whether lowering `graph` emits the fused kernel.
bool usesFlashKernel(const Graph &graph) {
  llvm::LLVMContext context;
  llvm::Module module("flash", context);
  TargetSelection::select({}).configureModule(module);
  lowerGraph(graph, module);
  for (const llvm::Function &function : module)
    if (function.getName().contains("flash_attention"))
      return true;
  return false;
}

/// 3-D self-attention [b, s, heads*size] with `attrs`.
std::unique_ptr<Graph> selfAttention3d(int64_t qHeads, int64_t kvHeads, int64_t size,
                                       const std::string &attrs) {
  std::string q = "f32[b, s, " + str(qHeads * size) + "]";
  std::string kv = "f32[b, s, " + str(kvHeads * size) + "]";
  GraphText g;
  g.input("q", q).input("k", kv).input("v", kv);
  g.node("%y = Attention(%q, %k, %v) {kv_num_heads = " + str(kvHeads) +
         ", q_num_heads = " + str(qHeads) + (attrs.empty() ? "" : ", " + attrs) + "}");
  g.output("y", q);
  return parseGraph(g.str());
}

Feeds selfFeeds(int64_t b, int64_t s, int64_t qHidden, int64_t kvHidden, unsigned seed) {
  return {{"q", randomOf(DType::F32, {b, s, qHidden}, seed, -3, 3)},
          {"k", randomOf(DType::F32, {b, s, kvHidden}, seed + 1, -3, 3)},
          {"v", randomOf(DType::F32, {b, s, kvHidden}, seed + 2)}};
}

TEST(LowerFlashAttention, ThreeDimensionalMasksHeadsAndLengths) {
  struct Heads {
    int64_t q, kv, size;
  };
  for (Heads h : test::sweep({Heads{4, 4, 16}, Heads{4, 2, 64}, Heads{2, 1, 80}})) {
    for (const char *attrs : {"", "is_causal = 1", "window = 5", "is_causal = 1, window = 7"}) {
      SCOPED_TRACE(std::string(attrs) + " heads " + str(h.q) + "/" + str(h.kv) + " size " +
                   str(h.size));
      auto graph = selfAttention3d(h.q, h.kv, h.size, attrs);
      ASSERT_TRUE(usesFlashKernel(*graph));
      // Y averages V values in [-1, 1]; an output that cancels to ~1e-3 keeps
      // f32's absolute error of ~1e-6 (scores up to ~10), hence atol 1e-5.
      for (auto [b, s] : std::vector<std::array<int64_t, 2>>{{1, 1}, {2, 37}, {1, 100}})
        expectCompiledMatchesReference(*graph, selfFeeds(b, s, h.q * h.size, h.kv * h.size, 1),
                                       1e-4, 1e-5);
    }
  }
}

TEST(LowerFlashAttention, EveryLastBlockSize) {
  // Blocks are 24 query rows at 8 lanes (a last block of 1-8, 9-16 or 17-23
  // rows runs on one, two or three row vectors) and 32 at 16 lanes (1-16 or
  // 17-31 rows on one or two). Both ends of each range, with a
  // padding mask, at head size 32 (whole 8-column groups only) and 12 (a
  // 4-column remainder in the query packing and the output).
  for (int64_t size : {32, 12}) {
    GraphText g;
    g.input("q", "f32[1, s, " + str(2 * size) + "]").input("k", "f32[1, s, " + str(2 * size) + "]");
    g.input("v", "f32[1, s, " + str(2 * size) + "]").input("m", "f32[1, 1, 1, s]");
    g.node("%y = Attention(%q, %k, %v, %m) {kv_num_heads = 2, q_num_heads = 2}");
    g.output("y", "f32[1, s, " + str(2 * size) + "]");
    auto graph = parseGraph(g.str());
    ASSERT_TRUE(usesFlashKernel(*graph));
    for (int64_t s : {25, 31, 32, 33, 39, 40, 41, 47, 48, 49, 63}) {
      SCOPED_TRACE("size " + str(size) + " s " + str(s));
      Feeds feeds = selfFeeds(1, s, 2 * size, 2 * size, unsigned(s));
      feeds.emplace("m", randomOf(DType::F32, {1, 1, 1, s}, unsigned(s) + 7, -4, 0));
      expectCompiledMatchesReference(*graph, feeds, 1e-4, 1e-5);
    }
  }
}

TEST(LowerFlashAttention, LongSequencesWithInteriorTiles) {
  // 300 keys: two full 128-key tiles and a partial one, some inside the causal and window
  // bands (no element-wise mask), some crossing them.
  for (const char *attrs :
       {"", "is_causal = 1", "window = 120", "is_causal = 1, window = 120", "scale = 0.05"}) {
    SCOPED_TRACE(attrs);
    auto graph = selfAttention3d(2, 2, 16, attrs);
    expectCompiledMatchesReference(*graph, selfFeeds(1, 300, 32, 32, 4));
    expectCompiledMatchesReference(*graph, selfFeeds(1, 203, 32, 32, 5), 1e-4, 1e-6,
                                   /*threads=*/2);
  }
}

TEST(LowerFlashAttention, FourDimensionalCrossAttention) {
  // Q and K head size 20, V head size 12; 4 query heads over 2 kv heads.
  for (const char *attrs : {"", "is_causal = 1", "window = 3", "is_causal = 1, window = 4"}) {
    SCOPED_TRACE(attrs);
    GraphText g;
    g.input("q", "f32[b, 4, s, 20]").input("k", "f32[b, 2, t, 20]").input("v", "f32[b, 2, t, 12]");
    g.node("%y = Attention(%q, %k, %v)" + std::string(*attrs ? " {" : "") + attrs +
           (*attrs ? "}" : ""));
    g.output("y", "f32[b, 4, s, 12]");
    auto graph = parseGraph(g.str());
    ASSERT_TRUE(usesFlashKernel(*graph));
    // Queries past the last key + window see no key at all: NaN, as in the reference.
    for (auto [b, s, t] :
         std::vector<std::array<int64_t, 3>>{{1, 1, 50}, {2, 37, 5}, {1, 100, 200}, {1, 1, 1}})
      expectCompiledMatchesReference(*graph, {{"q", randomOf(DType::F32, {b, 4, s, 20}, 7, -2, 2)},
                                              {"k", randomOf(DType::F32, {b, 2, t, 20}, 8, -2, 2)},
                                              {"v", randomOf(DType::F32, {b, 2, t, 12}, 9)}});
  }
}

/// [batch, 1, 1, keys]: keys at or past lengths[b] get `masked`, others 0.
Tensor paddingMask(DType dtype, int64_t keys, const std::vector<int64_t> &lengths, double masked) {
  int64_t batch = int64_t(lengths.size());
  Tensor mask(dtype, {batch, 1, 1, keys});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = 0; j < keys; ++j) {
      bool visible = j < lengths[size_t(b)];
      double value = dtype == DType::Bool ? (visible ? 1.0 : 0.0) : (visible ? 0.0 : masked);
      mask.setElementFromDouble(b * keys + j, value);
    }
  return mask;
}

TEST(LowerFlashAttention, PaddingMasksAloneAndWithCausal) {
  const double minusInf = -std::numeric_limits<double>::infinity();
  struct Case {
    DType dtype;
    double masked;
    const char *attrs;
  };
  for (Case c :
       {Case{DType::F32, -10000.0, ""}, Case{DType::F32, minusInf, ""}, Case{DType::Bool, 0.0, ""},
        Case{DType::F32, -10000.0, "is_causal = 1, "}, Case{DType::Bool, 0.0, "is_causal = 1, "},
        Case{DType::F32, minusInf, "window = 9, "}}) {
    SCOPED_TRACE(std::string(dtypeName(c.dtype)) + " " + c.attrs + str(int64_t(c.masked)));
    GraphText g;
    g.input("q", "f32[b, s, 128]").input("k", "f32[b, s, 128]").input("v", "f32[b, s, 128]");
    g.input("mask", std::string(dtypeName(c.dtype)) + "[b, 1, 1, s]");
    g.node(std::string("%y = Attention(%q, %k, %v, %mask) {") + c.attrs +
           "kv_num_heads = 2, q_num_heads = 2}");
    g.output("y", "f32[b, s, 128]");
    auto graph = parseGraph(g.str());
    ASSERT_TRUE(usesFlashKernel(*graph));
    for (auto [s, lengths] : std::vector<std::pair<int64_t, std::vector<int64_t>>>{
             {1, {1}}, {41, {41, 17}}, {130, {100, 3, 130}}}) {
      Feeds feeds = selfFeeds(int64_t(lengths.size()), s, 128, 128, 11);
      feeds["mask"] = paddingMask(c.dtype, s, lengths, c.masked);
      expectCompiledMatchesReference(*graph, feeds);
    }
  }
}

TEST(LowerFlashAttention, FullShortAndFullyMaskedMasks) {
  GraphText g;
  g.input("q", "f32[2, 3, 21, 16]").input("k", "f32[2, 3, 30, 16]").input("v", "f32[2, 3, 30, 16]");
  g.input("fmask", "f32[21, 30]").input("bmask", "bool[2, 3, 21, 30]");
  g.input("short", "f32[2, 1, 1, 25]");
  g.node("%yf = Attention(%q, %k, %v, %fmask)").output("yf", "f32[2, 3, 21, 16]");
  g.node("%yc = Attention(%q, %k, %v, %fmask) {is_causal = 1}").output("yc", "f32[2, 3, 21, 16]");
  g.node("%yb = Attention(%q, %k, %v, %bmask) {window = 6}").output("yb", "f32[2, 3, 21, 16]");
  g.node("%ys = Attention(%q, %k, %v, %short)").output("ys", "f32[2, 3, 21, 16]");
  auto graph = parseGraph(g.str());
  ASSERT_TRUE(usesFlashKernel(*graph));
  Tensor bmask = randomOf(DType::Bool, {2, 3, 21, 30}, 12);
  for (int64_t j = 0; j < 30; ++j) // row 5 of (0, 1) has every key masked: NaN
    bmask.setElementFromDouble((21 + 5) * 30 + j, 0.0);
  expectCompiledMatchesReference(*graph, {{"q", randomOf(DType::F32, {2, 3, 21, 16}, 13, -2, 2)},
                                          {"k", randomOf(DType::F32, {2, 3, 30, 16}, 14, -2, 2)},
                                          {"v", randomOf(DType::F32, {2, 3, 30, 16}, 15)},
                                          {"fmask", randomOf(DType::F32, {21, 30}, 16, -3, 0)},
                                          {"bmask", bmask},
                                          {"short", randomOf(DType::F32, {2, 1, 1, 25}, 17)}});
}

TEST(LowerFlashAttention, WideScoreRanges) {
  // Scores of standard deviation 17 (scale 1): many probabilities lie below
  // e^-60, where the kernel's exp gives e^-60 instead of nearly 0, and the
  // row max can jump by more than 60 between tiles (alpha below e^-60 too).
  // An additive mask of -1e30 on some keys, and 130 rows: off the 24-row
  // block. Larger scores would only test f32's rounding of S - max.
  GraphText g;
  g.input("q", "f32[1, 2, 130, 32]").input("k", "f32[1, 2, 130, 32]");
  g.input("v", "f32[1, 2, 130, 32]").input("mask", "f32[1, 1, 1, 130]");
  g.node("%y = Attention(%q, %k, %v, %mask) {scale = 1.0}").output("y", "f32[1, 2, 130, 32]");
  g.node("%yc = Attention(%q, %k, %v) {is_causal = 1, scale = 1.0}")
      .output("yc", "f32[1, 2, 130, 32]");
  auto graph = parseGraph(g.str());
  ASSERT_TRUE(usesFlashKernel(*graph));
  Tensor mask = randomOf(DType::F32, {1, 1, 1, 130}, 21, -1, 1);
  for (int64_t j = 3; j < 130; j += 7)
    mask.setElementFromDouble(j, -1e30);
  expectCompiledMatchesReference(*graph,
                                 {{"q", randomOf(DType::F32, {1, 2, 130, 32}, 22, -3, 3)},
                                  {"k", randomOf(DType::F32, {1, 2, 130, 32}, 23, -3, 3)},
                                  {"v", randomOf(DType::F32, {1, 2, 130, 32}, 24)},
                                  {"mask", mask}},
                                 1e-4, 1e-5);
}

TEST(LowerFlashAttention, GptHeadSizesAcrossTilesAndBlocks) {
  // Head sizes 64 (GPT-2, BERT) and 128 (LLaMA): no mask, causal, and the
  // exported finite fill (Where(mask, scores, finfo.min)) with a window, so
  // keys outside the band still count; lengths off both block sizes and the
  // 128-key tile; 4-D cross attention with 70 queries over 300 keys.
  for (int64_t size : {64, 128}) {
    for (const char *attrs : test::sweep<const char *>(
             {"", "is_causal = 1", "is_causal = 1, mask_fill = -3.4028235e+38, window = 40"})) {
      SCOPED_TRACE(std::string(attrs) + " size " + str(size));
      auto graph = selfAttention3d(2, 2, size, attrs);
      for (int64_t s : {130, 257})
        expectCompiledMatchesReference(*graph, selfFeeds(1, s, 2 * size, 2 * size, unsigned(s)),
                                       1e-4, 1e-5);
    }
    GraphText g;
    g.input("q", "f32[1, 2, s, " + str(size) + "]").input("k", "f32[1, 2, t, " + str(size) + "]");
    g.input("v", "f32[1, 2, t, " + str(size) + "]");
    g.node("%y = Attention(%q, %k, %v)").output("y", "f32[1, 2, s, " + str(size) + "]");
    auto cross = parseGraph(g.str());
    ASSERT_TRUE(usesFlashKernel(*cross));
    expectCompiledMatchesReference(*cross,
                                   {{"q", randomOf(DType::F32, {1, 2, 70, size}, 31, -2, 2)},
                                    {"k", randomOf(DType::F32, {1, 2, 300, size}, 32, -2, 2)},
                                    {"v", randomOf(DType::F32, {1, 2, 300, size}, 33)}},
                                   1e-4, 1e-5);
  }
}

TEST(LowerFlashAttention, PackedProjectionIsReadInPlace) {
  // HF GPT-2's c_attn output [b, s, 3h] split into Q, K, V: the kernel reads
  // the packed rows (one step, no Split copy), here also with grouped heads
  // (K and V narrower than Q) and the parts in another order. When a part is
  // read elsewhere too (a graph output), the Split copies as before.
  struct Case {
    std::string split, extra;
    bool grouped;
    size_t steps;
  };
  for (const Case &c :
       std::vector<Case>{{"%q, %k, %v = Split(%x, %sizes) {axis = 2}", "", false, 1},
                         {"%q, %k, %v = Split(%x, %sizes) {axis = 2}", "", true, 1},
                         {"%k, %v, %q = Split(%x, %sizes) {axis = -1}", "", true, 1},
                         {"%q, %k, %v = Split(%x, %sizes) {axis = 2}", "k", false, 2}}) {
    bool grouped = c.grouped;
    SCOPED_TRACE(c.split + (grouped ? " grouped" : "") + " " + c.extra);
    int64_t qWidth = 64, kvWidth = grouped ? 32 : 64;
    std::string sizes = c.split.rfind("%k, %v, %q", 0) == 0
                            ? str(kvWidth) + ", " + str(kvWidth) + ", " + str(qWidth)
                            : str(qWidth) + ", " + str(kvWidth) + ", " + str(kvWidth);
    int64_t packed = qWidth + 2 * kvWidth;
    GraphText g;
    g.input("x", "f32[b, s, " + str(packed) + "]");
    g.constant("%sizes: i64[3] = dense<[" + sizes + "]>");
    g.node(c.split);
    g.node("%y = Attention(%q, %k, %v) {is_causal = 1, kv_num_heads = " + str(grouped ? 2 : 4) +
           ", q_num_heads = 4}");
    g.output("y", "f32[b, s, 64]");
    if (!c.extra.empty())
      g.output(c.extra, "f32[b, s, " + str(kvWidth) + "]");
    auto graph = parseGraph(g.str());
    EXPECT_EQ(lowertest::lowerOnly(*graph).steps.size(), c.steps);
    for (auto [b, s] : std::vector<std::array<int64_t, 2>>{{1, 1}, {2, 45}})
      expectCompiledMatchesReference(
          *graph, {{"x", randomOf(DType::F32, {b, s, packed}, unsigned(s), -2, 2)}}, 1e-4, 1e-5);
  }
}

TEST(LowerFlashAttention, KernelWidthFollowsTheGemmLanes) {
  // 16 lanes: <16 x float> FMAs in a function that keeps them whole zmm
  // registers; 8 lanes: <8 x float> and no such attribute.
  auto graph = selfAttention3d(2, 2, 16, "is_causal = 1");
  for (int64_t lanes : {8, 16}) {
    SCOPED_TRACE(lanes);
    llvm::LLVMContext context;
    llvm::Module module("flash", context);
    TargetSelection::select({}).configureModule(module);
    LoweringOptions options;
    options.gemmLanes = lanes;
    lowerGraph(*graph, module, options);
    const llvm::Function *flash = nullptr;
    // The step's kernel (its task-count function shares the name's prefix).
    for (const llvm::Function &function : module)
      if (function.getName().contains("flash_attention") &&
          (!flash || function.size() > flash->size()))
        flash = &function;
    ASSERT_NE(flash, nullptr);
    llvm::Attribute width = flash->getFnAttribute("min-legal-vector-width");
    EXPECT_EQ(width.isValid() ? width.getValueAsString().str() : "", lanes == 16 ? "512" : "");
    bool sawWidth = false;
    for (const llvm::BasicBlock &block : *flash)
      for (const llvm::Instruction &instruction : block)
        if (const auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&instruction))
          if (call->getIntrinsicID() == llvm::Intrinsic::fmuladd)
            if (auto *type = llvm::dyn_cast<llvm::FixedVectorType>(call->getType()))
              sawWidth = sawWidth || type->getNumElements() == unsigned(lanes);
    EXPECT_TRUE(sawWidth);
  }
}

TEST(LowerFlashAttention, TakesTheFastPathOnlyWhereItApplies) {
  auto attention = [](const std::string &type, const std::string &attrs,
                      const std::string &results = "%y") {
    GraphText g;
    g.input("q", type + "[1, 2, s, 8]").input("k", type + "[1, 2, s, 8]");
    g.input("v", type + "[1, 2, s, 8]");
    g.node(results + " = Attention(%q, %k, %v)" + attrs).output("y", type + "[1, 2, s, 8]");
    return parseGraph(g.str());
  };
  EXPECT_TRUE(usesFlashKernel(*attention("f32", " {is_causal = 1, window = 2}")));
  EXPECT_FALSE(usesFlashKernel(*attention("f16", "")));
  EXPECT_FALSE(usesFlashKernel(*attention("f64", " {is_causal = 1}")));
  EXPECT_FALSE(usesFlashKernel(*attention("f32", " {softcap = 2.0}")));
  GraphText qk;
  qk.input("q", "f32[1, 2, s, 8]").input("k", "f32[1, 2, s, 8]").input("v", "f32[1, 2, s, 8]");
  qk.node("%y, %pk, %pv, %qk = Attention(%q, %k, %v)").output("y", "f32[1, 2, s, 8]");
  qk.output("qk", "f32[1, 2, s, s]");
  EXPECT_FALSE(usesFlashKernel(*parseGraph(qk.str())));
}

TEST(LowerFlashAttention, ReadsAPastCacheInPlace) {
  // A KV-cache decoder's Attention: keys [0, past) from past_key/past_value,
  // the rest from K/V, the causal diagonal and the window offset by the past,
  // grouped K/V heads (4 over 2). A finite mask_fill makes the keys the band
  // skips score it (FlashAttentionSkippedKeys.cpp). Against the evaluator at
  // an empty past, a short one and one spanning tiles, for one new token and
  // for a prompt.
  GraphText g;
  g.input("q", "f32[1, 4, s, 16]").input("k", "f32[1, 2, s, 16]").input("v", "f32[1, 2, s, 16]");
  g.input("pk", "f32[1, 2, p, 16]").input("pv", "f32[1, 2, p, 16]");
  g.node("%yc = Attention(%q, %k, %v, _, %pk, %pv) {is_causal = 1}");
  g.node("%yw = Attention(%q, %k, %v, _, %pk, %pv) {is_causal = 1, window = 5}");
  g.node("%yf = Attention(%q, %k, %v, _, %pk, %pv) {is_causal = 1, mask_fill = -30.0}");
  g.output("yc", "f32[1, 4, s, 16]").output("yw", "f32[1, 4, s, 16]");
  g.output("yf", "f32[1, 4, s, 16]");
  auto graph = parseGraph(g.str());
  EXPECT_TRUE(usesFlashKernel(*graph));
  for (int64_t past : {0, 3, 150})
    for (int64_t s : {1, 13}) {
      SCOPED_TRACE("past " + std::to_string(past) + ", " + std::to_string(s) + " new");
      expectCompiledMatchesReference(*graph,
                                     {{"q", randomOf(DType::F32, {1, 4, s, 16}, 31, -2, 2)},
                                      {"k", randomOf(DType::F32, {1, 2, s, 16}, 32, -2, 2)},
                                      {"v", randomOf(DType::F32, {1, 2, s, 16}, 33)},
                                      {"pk", randomOf(DType::F32, {1, 2, past, 16}, 34, -2, 2)},
                                      {"pv", randomOf(DType::F32, {1, 2, past, 16}, 35)}});
    }
}

TEST(LowerFlashAttention, SingleQueryRowsAgainstALongPast) {
  // One query row (a decode step, and the last row of 25 or 33: one past a
  // whole block at 8 and 16 lanes) runs with the lanes over the head's
  // columns (FlashAttentionSingleRow.cpp). Head sizes with a partial last
  // vector (20, 72) and more column vectors than P·V keeps in registers
  // at once (200); past lengths across tiles; a per-row float mask, a bool
  // mask hiding all of row 0's keys in batch 1 (NaN with -inf, uniform with
  // a finite fill), and a window whose skipped keys score the fill.
  for (int64_t size : test::sweep<int64_t>({20, 72, 200})) {
    const std::string d = str(size);
    GraphText g;
    g.input("q", "f32[2, 4, s, " + d + "]").input("k", "f32[2, 2, s, " + d + "]");
    g.input("v", "f32[2, 2, s, " + d + "]").input("pk", "f32[2, 2, p, " + d + "]");
    g.input("pv", "f32[2, 2, p, " + d + "]").input("fm", "f32[2, 1, s, t]");
    g.input("bm", "bool[2, 1, s, t]");
    const std::string y = "f32[2, 4, s, " + d + "]";
    g.node("%yc = Attention(%q, %k, %v, %fm, %pk, %pv) {is_causal = 1}").output("yc", y);
    g.node("%yb = Attention(%q, %k, %v, %bm, %pk, %pv)").output("yb", y);
    g.node("%yf = Attention(%q, %k, %v, %bm, %pk, %pv) {mask_fill = -1e4}").output("yf", y);
    g.node("%yw = Attention(%q, %k, %v, %fm, %pk, %pv) {is_causal = 1, window = 40, "
           "mask_fill = -3.4028235e38}")
        .output("yw", y);
    auto graph = parseGraph(g.str());
    ASSERT_TRUE(usesFlashKernel(*graph));
    for (auto [past, s] : std::vector<std::array<int64_t, 2>>{{0, 1}, {300, 1}, {7, 33}}) {
      SCOPED_TRACE("size " + d + ", past " + str(past) + ", " + str(s) + " new");
      const int64_t total = past + s;
      Tensor bm = randomOf(DType::Bool, {2, 1, s, total}, 41);
      for (int64_t j = 0; j < total; ++j) // batch 1's last row sees no key
        bm.setElementFromDouble((s + s - 1) * total + j, 0.0);
      expectCompiledMatchesReference(*graph,
                                     {{"q", randomOf(DType::F32, {2, 4, s, size}, 42, -2, 2)},
                                      {"k", randomOf(DType::F32, {2, 2, s, size}, 43, -2, 2)},
                                      {"v", randomOf(DType::F32, {2, 2, s, size}, 44)},
                                      {"pk", randomOf(DType::F32, {2, 2, past, size}, 45, -2, 2)},
                                      {"pv", randomOf(DType::F32, {2, 2, past, size}, 46)},
                                      {"fm", randomOf(DType::F32, {2, 1, s, total}, 47, -3, 0)},
                                      {"bm", bm}},
                                     1e-4, 1e-5);
    }
  }
}

TEST(LowerFlashAttention, GroupedQueryHeadsShareADecodeBlock) {
  // A decode step of grouped-query attention runs each KV head's group of
  // query heads as one block, rows over heads (6 per KV head: 6 of 8 lanes,
  // 3 row vectors' worth at 16 lanes), reading the cache once per group;
  // a mask that differs per head keeps the blocks per head. Against the
  // evaluator for one new token and for three.
  GraphText g;
  g.input("q", "f32[2, 12, s, 32]").input("k", "f32[2, 2, s, 32]").input("v", "f32[2, 2, s, 32]");
  g.input("pk", "f32[2, 2, p, 32]").input("pv", "f32[2, 2, p, 32]");
  g.input("m", "f32[2, 1, s, t]").input("hm", "f32[2, 12, s, t]");
  const std::string y = "f32[2, 12, s, 32]";
  g.node("%yc = Attention(%q, %k, %v, %m, %pk, %pv) {is_causal = 1}").output("yc", y);
  g.node("%yw = Attention(%q, %k, %v, _, %pk, %pv) {is_causal = 1, window = 50}").output("yw", y);
  g.node("%yh = Attention(%q, %k, %v, %hm, %pk, %pv)").output("yh", y);
  auto graph = parseGraph(g.str());
  ASSERT_TRUE(usesFlashKernel(*graph));
  for (auto [past, s] : std::vector<std::array<int64_t, 2>>{{0, 1}, {200, 1}, {200, 3}}) {
    SCOPED_TRACE("past " + str(past) + ", " + str(s) + " new");
    const int64_t total = past + s;
    expectCompiledMatchesReference(*graph,
                                   {{"q", randomOf(DType::F32, {2, 12, s, 32}, 61, -2, 2)},
                                    {"k", randomOf(DType::F32, {2, 2, s, 32}, 62, -2, 2)},
                                    {"v", randomOf(DType::F32, {2, 2, s, 32}, 63)},
                                    {"pk", randomOf(DType::F32, {2, 2, past, 32}, 64, -2, 2)},
                                    {"pv", randomOf(DType::F32, {2, 2, past, 32}, 65)},
                                    {"m", randomOf(DType::F32, {2, 1, s, total}, 66, -3, 0)},
                                    {"hm", randomOf(DType::F32, {2, 12, s, total}, 67, -3, 0)}},
                                   1e-4, 1e-5);
  }
}

TEST(LowerFlashAttention, GroupedHeadsOnPairedLanes) {
  // At most half a row vector of grouped heads (4 and 8 per KV head; 4 is
  // half of 8 lanes too) runs its decode step on paired lanes, a column
  // pair per lane pair (FlashAttentionPairedColumns.cpp): head sizes 64
  // and 18 (whole and partial vectors of pairs) with a value size of 6,
  // no past and one across tiles, a float mask, causal and a window. (An
  // odd head size or a finite mask_fill keeps the row-lane kernel, which
  // GroupedQueryHeadsShareADecodeBlock checks at 8 lanes.)
  struct Shape {
    int64_t group, d, dv;
  };
  for (Shape shape : std::vector<Shape>{{8, 64, 64}, {4, 18, 6}}) {
    const int64_t q = 2 * shape.group;
    const std::string qh = str(q), d = str(shape.d), dv = str(shape.dv);
    GraphText g;
    g.input("q", "f32[1, " + qh + ", s, " + d + "]").input("k", "f32[1, 2, s, " + d + "]");
    g.input("v", "f32[1, 2, s, " + dv + "]").input("pk", "f32[1, 2, p, " + d + "]");
    g.input("pv", "f32[1, 2, p, " + dv + "]").input("m", "f32[1, 1, s, t]");
    const std::string y = "f32[1, " + qh + ", s, " + dv + "]";
    g.node("%yc = Attention(%q, %k, %v, %m, %pk, %pv) {is_causal = 1}").output("yc", y);
    g.node("%yw = Attention(%q, %k, %v, _, %pk, %pv) {is_causal = 1, window = 70}").output("yw", y);
    auto graph = parseGraph(g.str());
    ASSERT_TRUE(usesFlashKernel(*graph));
    for (int64_t past : {0, 300}) {
      SCOPED_TRACE("group " + str(shape.group) + ", size " + d + "/" + dv + ", past " + str(past));
      const int64_t total = past + 1;
      expectCompiledMatchesReference(
          *graph,
          {{"q", randomOf(DType::F32, {1, q, 1, shape.d}, 71, -2, 2)},
           {"k", randomOf(DType::F32, {1, 2, 1, shape.d}, 72, -2, 2)},
           {"v", randomOf(DType::F32, {1, 2, 1, shape.dv}, 73)},
           {"pk", randomOf(DType::F32, {1, 2, past, shape.d}, 74, -2, 2)},
           {"pv", randomOf(DType::F32, {1, 2, past, shape.dv}, 75)},
           {"m", randomOf(DType::F32, {1, 1, 1, total}, 76, -3, 0)}},
          1e-4, 1e-5);
    }
  }
}

TEST(LowerFlashAttention, KeysTheMaskHidesAtBothEndsAreNotRead) {
  // A fixed-length cache's unwritten rows and a row's left padding are
  // hidden by the mask from every row of a block: the kernel leaves them out
  // (FlashAttentionMaskedRange.cpp). NaN in those K and V rows would poison
  // a visited key's weighted sum (0 * NaN), so results equal to the
  // reference over zeros there show the rows are never read. The visible
  // span of each batch row differs, one row of batch 1 sees nothing
  // (zeros: masked_rows_zero), and a finite -2 in the float mask inside a
  // hidden run keeps that key (and the hidden keys before it are read). Decode (one query row,
  // grouped heads sharing a block) and a prompt of 40 rows, over 700 keys (six tiles).
  const int64_t keys = 700;
  const std::array<std::array<int64_t, 2>, 2> visible = {{{3, 37}, {130, 520}}};
  for (DType dtype : {DType::Bool, DType::F32}) {
    for (int64_t s : {int64_t(1), int64_t(40)}) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + ", " + str(s) + " query rows");
      GraphText g;
      g.input("q", "f32[2, 8, " + str(s) + ", 32]").input("k", "f32[2, 2, 700, 32]");
      g.input("v", "f32[2, 2, 700, 32]");
      g.input("m", std::string(dtypeName(dtype)) + "[2, 1, " + str(s) + ", 700]");
      g.node("%y = Attention(%q, %k, %v, %m) {masked_rows_zero = 1}");
      g.output("y", "f32[2, 8, " + str(s) + ", 32]");
      auto graph = parseGraph(g.str());
      ASSERT_TRUE(usesFlashKernel(*graph));
      Tensor mask(dtype, {2, 1, s, keys});
      Tensor k = randomOf(DType::F32, {2, 2, keys, 32}, 71, -2, 2);
      Tensor v = randomOf(DType::F32, {2, 2, keys, 32}, 72);
      Tensor kNan = k.clone(), vNan = v.clone();
      for (int64_t b = 0; b < 2; ++b) {
        auto [lo, hi] = visible[size_t(b)];
        for (int64_t i = 0; i < s; ++i)
          for (int64_t j = 0; j < keys; ++j) {
            bool seen = j >= lo && j <= hi && !(b == 1 && i == s - 1);
            double hidden = dtype == DType::Bool ? 0.0 : -std::numeric_limits<double>::infinity();
            double value = seen ? (dtype == DType::Bool ? 1.0 : -0.5 * double(j % 3)) : hidden;
            if (dtype == DType::F32 && b == 0 && j == hi + 40)
              value = -2.0; // finite: visible
            mask.setElementFromDouble((b * s + i) * keys + j, value);
          }
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t j = 0; j < keys; ++j) {
            bool read = j >= lo && j <= (dtype == DType::F32 && b == 0 ? hi + 40 : hi);
            for (int64_t c = 0; c < 32 && !read; ++c) {
              int64_t at = ((b * 2 + h) * keys + j) * 32 + c;
              k.setElementFromDouble(at, 0.0);
              v.setElementFromDouble(at, 0.0);
              kNan.setElementFromDouble(at, std::nan(""));
              vNan.setElementFromDouble(at, std::nan(""));
            }
          }
      }
      Tensor q = randomOf(DType::F32, {2, 8, s, 32}, 73, -2, 2);
      std::vector<Tensor> want =
          lowertest::runReference(*graph, {{"q", q}, {"k", k}, {"v", v}, {"m", mask}});
      for (const auto &[name, request] : widths()) {
        SCOPED_TRACE(name);
        lowertest::ScopedTarget target(request);
        std::vector<Tensor> got =
            lowertest::runCompiled(*graph, {{"q", q}, {"k", kNan}, {"v", vNan}, {"m", mask}});
        for (int64_t i = 0; i < want[0].numElements(); ++i)
          ASSERT_NEAR(got[0].elementAsDouble(i), want[0].elementAsDouble(i),
                      1e-5 + 1e-4 * std::fabs(want[0].elementAsDouble(i)))
              << "element " << i;
      }
    }
  }
}

TEST(LowerFlashAttention, ThreeDimensionalFormWithAPast) {
  // Opset 23's own cache in its 3-D form: Q/K/V [b, s, heads*size] (and
  // seq_first's [s, b, heads*size]) with past_key/past_value
  // [b, kvHeads, past, size]; present_key/value are the past then K/V.
  for (const char *order : {"", ", seq_first = 1"}) {
    const bool seqFirst = *order != 0;
    auto dims = [&](const std::string &last) {
      return std::string("f32[") + (seqFirst ? "s, 2, " : "2, s, ") + last + "]";
    };
    GraphText g;
    g.input("q", dims("64")).input("k", dims("32")).input("v", dims("32"));
    g.input("pk", "f32[2, 2, p, 16]").input("pv", "f32[2, 2, p, 16]");
    g.node(std::string("%y, %prk, %prv = Attention(%q, %k, %v, _, %pk, %pv) {is_causal = 1, "
                       "kv_num_heads = 2, q_num_heads = 4") +
           order + "}");
    g.output("y", dims("64")).output("prk", "f32[2, 2, t, 16]").output("prv", "f32[2, 2, t, 16]");
    auto graph = parseGraph(g.str());
    EXPECT_TRUE(usesFlashKernel(*graph));
    for (auto [past, s] : std::vector<std::array<int64_t, 2>>{{0, 5}, {9, 1}, {140, 3}}) {
      SCOPED_TRACE(std::string(order) + " past " + str(past) + ", " + str(s) + " new");
      std::vector<int64_t> shape =
          seqFirst ? std::vector<int64_t>{s, 2} : std::vector<int64_t>{2, s};
      auto with = [&](int64_t last) {
        std::vector<int64_t> full = shape;
        full.push_back(last);
        return full;
      };
      expectCompiledMatchesReference(*graph,
                                     {{"q", randomOf(DType::F32, with(64), 51, -2, 2)},
                                      {"k", randomOf(DType::F32, with(32), 52, -2, 2)},
                                      {"v", randomOf(DType::F32, with(32), 53)},
                                      {"pk", randomOf(DType::F32, {2, 2, past, 16}, 54, -2, 2)},
                                      {"pv", randomOf(DType::F32, {2, 2, past, 16}, 55)}});
    }
  }
}

TEST(LowerFlashAttention, GeneralPathHonoursWindow) {
  // softcap and f64 take the general kernel; window must hold there too.
  GraphText g;
  g.input("q", "f32[1, 2, s, 8]").input("k", "f32[1, 2, s, 8]").input("v", "f32[1, 2, s, 8]");
  g.input("q64", "f64[1, 2, s, 8]");
  g.node("%yc = Attention(%q, %k, %v) {softcap = 2.0, window = 2}").output("yc", "f32[1, 2, s, 8]");
  g.node("%k64 = Cast(%k) {to = 11}").node("%v64 = Cast(%v) {to = 11}");
  g.node("%yd = Attention(%q64, %k64, %v64) {is_causal = 1, window = 3}");
  g.output("yd", "f64[1, 2, s, 8]");
  auto graph = parseGraph(g.str());
  EXPECT_FALSE(usesFlashKernel(*graph));
  for (int64_t s : {1, 9})
    expectCompiledMatchesReference(*graph, {{"q", randomOf(DType::F32, {1, 2, s, 8}, 18, -2, 2)},
                                            {"k", randomOf(DType::F32, {1, 2, s, 8}, 19, -2, 2)},
                                            {"v", randomOf(DType::F32, {1, 2, s, 8}, 20)},
                                            {"q64", randomOf(DType::F64, {1, 2, s, 8}, 21)}});
}

} // namespace
} // namespace onnxc
