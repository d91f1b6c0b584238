//===- codegen/kernels/GemmIRBuilder.h - Loop-nest emission shared by GEMM kernels -===//
//
// Codegen-internal. Wraps an IRBuilder positioned in a kernel function and
// emits the pieces of GemmEmitter.h's loop nest: counted loops with carried
// values, A-block packing, the MR x NR micro-kernel, the tile store with its
// fused epilogue, and run-time B packing. Dims are llvm::Values that are
// constants when the kernel is specialized, so one emitter serves both
// specialized and run-time shapes (IRBuilder folds the constant cases).
// The loop nest and packing are in GemmIRBuilder.cpp, the tiles (micro-kernel,
// stores, panel columns and groups) in GemmTileIR.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/kernels/GemmEmitter.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/IR/IRBuilder.h"

#include <array>
#include <functional>
#include <vector>

namespace onnxc {

/// Run-time operands of one C[rowBegin:rowEnd, 0:N] = A * packedB product.
struct GemmOperands {
  llvm::Value *a, *lda;
  llvm::Value *packedB;
  llvm::Value *c, *ldc;
  llvm::Value *rowBegin, *rowEnd;
  llvm::Value *k, *n;
  /// Used only when the epilogue asks for them.
  llvm::Value *bias = nullptr, *residual = nullptr, *ldResidual = nullptr;
  /// Columns [colBegin, colEnd) only (null: all N). colBegin is a multiple
  /// of NR; colEnd is one too, or N.
  llvm::Value *colBegin = nullptr, *colEnd = nullptr;
  /// When set, B is not packed floats: before a (K block, panel)'s tiles
  /// the kernel emits this, which makes the panel's floats ([depth][NR]) in
  /// a buffer from packedB (its own format) and returns the buffer. The
  /// tiles then prefetch no next panel, and a row block of one or two rows
  /// walks the panels one at a time.
  std::function<llvm::Value *(llvm::Value *kBlock, llvm::Value *depth, llvm::Value *panel)>
      panelSource;
};

/// `activation` applied lane-wise to the float vector `x`: the GEMM
/// epilogue's (the GELU forms are VectorMath.h's, NaN at -inf as the
/// evaluator's).
llvm::Value *emitGemmActivation(llvm::IRBuilder<> &builder, llvm::Value *x,
                                GemmActivation activation);

class GemmIRBuilder {
public:
  /// Positions at the end of a new entry block of `function` and allocates
  /// the packed-A buffer and the tile scratch there.
  GemmIRBuilder(llvm::Function &function, const GemmBlocking &blocking);

  llvm::IRBuilder<> &ir() { return builder_; }
  llvm::Value *index(int64_t value) { return builder_.getInt64(value); }

  /// for (iv = begin; iv < end; iv += step) with loop-carried values; returns
  /// the carried values after the loop (`initial` if it runs zero times).
  using LoopBody =
      llvm::function_ref<std::vector<llvm::Value *>(llvm::Value *, llvm::ArrayRef<llvm::Value *>)>;
  std::vector<llvm::Value *> emitLoop(llvm::Value *begin, llvm::Value *end, int64_t step,
                                      llvm::ArrayRef<llvm::Value *> initial, LoopBody body);
  /// The same without carried values.
  void emitLoop(llvm::Value *begin, llvm::Value *end, int64_t step,
                llvm::function_ref<void(llvm::Value *)> body);
  /// if (condition) { then() } else { otherwise() }; `otherwise` may be empty.
  void emitIf(llvm::Value *condition, llvm::function_ref<void()> then,
              llvm::function_ref<void()> otherwise = nullptr);

  /// The blocked loop nest over K blocks, A row blocks, B panels and tiles.
  void emitBlockedGemm(const GemmOperands &operands, const GemmEpilogue &epilogue);

  /// Packs B ([k, n] with leading dimension ldb, or [n, k] when transposed)
  /// into `out` in the GemmPacking.h layout for this builder's kc.
  void emitPackB(llvm::Value *b, llvm::Value *ldb, llvm::Value *k, llvm::Value *n, bool transposed,
                 llvm::Value *out);

private:
  /// Row blocks of at most this many rows walk B's panels in groups.
  static constexpr int64_t kMaxGroupRows = 2;
  static constexpr int64_t kGroupPanels = 4;
  using Accumulators = std::array<llvm::Value *, GemmMaxMR * 2>;

  /// Where a tile's A values come from: a packed k-major panel (MR floats per
  /// k), or the tile's rows of A itself (one pointer per row, at the K
  /// block's first column).
  struct ATile {
    llvm::Value *panel = nullptr;
    std::array<llvm::Value *, GemmMaxMR> rows{};
  };

  llvm::Value *floatAt(llvm::Value *base, llvm::Value *offset);
  llvm::Value *min(llvm::Value *a, llvm::Value *b);
  /// Lanes [half*lanes, (half+1)*lanes) of an nr-column panel that are <
  /// width, or nullptr when `width` is statically >= nr (a full panel).
  llvm::Value *laneMask(llvm::Value *width, int half);
  llvm::Value *loadVector(llvm::Value *pointer, llvm::Value *mask);
  void storeVector(llvm::Value *value, llvm::Value *pointer, llvm::Value *mask);

  /// Packs MR full rows of A ([MR, depth] at `source`) into one k-major panel.
  void emitPackFullPanel(llvm::Value *source, llvm::Value *lda, llvm::Value *panel,
                         llvm::Value *depth);
  void emitPackABlock(llvm::Value *a, llvm::Value *lda, llvm::Value *rows, llvm::Value *depth);
  /// The lines of the next B panel a tile prefetches: per iteration of the
  /// micro-kernel's k loop, `lines` lines `spacing` floats apart from
  /// `first` + k * NR floats (none without `first`; emitPanelColumn says
  /// which).
  struct PanelPrefetch {
    llvm::Value *first = nullptr;
    int64_t lines = 0, spacing = 0;
  };

  /// The first `rows` rows of the MR x NR tile over `depth` k (the other
  /// accumulators are zero), the k loop unrolled by `unroll` (even: a short
  /// tile alternates two sets of accumulators), prefetching as `prefetch`
  /// says when it is set.
  Accumulators emitMicroKernel(const ATile &a, llvm::Value *bPanel, llvm::Value *depth,
                               int64_t unroll, const PanelPrefetch &prefetch, int64_t rows);
  /// A prefetch of `pointer`'s line (locality 0-3, 3 = L1; 2 = L2 on x86).
  void emitPrefetch(llvm::Value *pointer, bool write, int locality);
  /// One panel's column of tiles over a row block, as emitPanelColumn's
  /// pieces see it (width: the panel's valid columns).
  struct PanelColumn {
    const GemmOperands &operands;
    const GemmEpilogue &epilogue;
    llvm::Value *aBlock, *rowBlock, *rows, *depth, *bPanel, *col, *isFirst, *isLast, *width;
  };
  /// The tile at `tileRow`: its A rows, or its panel of the packed A block.
  ATile aTileAt(const PanelColumn &column, llvm::Value *tileRow);
  /// Prefetches of `perStep` lines per iteration of an `unroll`-k loop, from
  /// the tile's offset among `spread` (the iteration's lines / perStep)
  /// tiles.
  PanelPrefetch panelPrefetch(const PanelColumn &column, llvm::Value *tileRow, int64_t unroll,
                              int64_t perStep);
  /// The densest prefetch: the whole next panel covered by one tile.
  int64_t densestPrefetchPerStep(int64_t unroll) const;
  /// The full MR-row tiles of rows [0, fullRows), prefetching `perStep`
  /// lines per k-loop iteration, stored straight from the accumulators.
  void emitFullTiles(const PanelColumn &column, llvm::Value *fullRows, int64_t perStep);
  /// The rows from `fullRows` on (fewer than MR), through the tile scratch.
  void emitTailTile(const PanelColumn &column, llvm::Value *fullRows);
  /// Columns [col, col + nr) of the whole A block, one tile per MR rows.
  void emitPanelColumn(const GemmOperands &operands, const GemmEpilogue &epilogue,
                       llvm::Value *aBlock, llvm::Value *rowBlock, llvm::Value *rows,
                       llvm::Value *depth, llvm::Value *bPanel, llvm::Value *col,
                       llvm::Value *isFirst, llvm::Value *isLast, bool fullWidth);
  std::array<llvm::Value *, 2> loadBias(const GemmOperands &operands, const GemmEpilogue &epilogue,
                                        llvm::Value *col, const std::array<llvm::Value *, 2> &masks,
                                        bool applyEpilogue);
  /// Adds the previous C (later K blocks), applies the epilogue and stores
  /// one vector (half of the tile's width) of row `outRow`.
  void emitStoreHalf(const GemmOperands &operands, const GemmEpilogue &epilogue, llvm::Value *value,
                     llvm::Value *outRow, llvm::Value *col, int half, llvm::Value *mask,
                     llvm::Value *bias, llvm::Value *isFirst, bool applyEpilogue);
  /// A full MR-row tile, straight from the accumulators.
  void emitFullTileStore(const GemmOperands &operands, const GemmEpilogue &epilogue,
                         const Accumulators &acc, llvm::Value *row, llvm::Value *col,
                         llvm::Value *width, llvm::Value *isFirst, bool applyEpilogue);
  void emitPrefetchTile(const GemmOperands &operands, llvm::Value *row, llvm::Value *col);
  /// Columns [col, col + 4 nr) of `rows` (1 or 2) rows: four panels from
  /// `bGroup` side by side, A read from its rows at `aBlock`.
  void emitPanelGroup(const GemmOperands &operands, const GemmEpilogue &epilogue,
                      llvm::Value *aBlock, llvm::Value *rowBlock, int64_t rows, llvm::Value *depth,
                      llvm::Value *bGroup, llvm::Value *col, llvm::Value *isFirst,
                      llvm::Value *isLast);
  /// A tile of `rows` <= MR valid rows, from the tile scratch.
  void emitTileStore(const GemmOperands &operands, const GemmEpilogue &epilogue, llvm::Value *row,
                     llvm::Value *rows, llvm::Value *col, llvm::Value *width, llvm::Value *isFirst,
                     bool applyEpilogue);

  llvm::IRBuilder<> builder_;
  GemmBlocking blocking_;
  llvm::Type *floatType_;
  int64_t lanes_, nr_, mr_;
  /// k steps per iteration of the micro-kernel's loop (4 at either width; see the constructor).
  int64_t unroll_;
  /// Whether tiles prefetch the next B panel (not when panels are made in
  /// a buffer: GemmOperands::panelSource).
  bool prefetchPanels_ = true;
  llvm::VectorType *vectorType_;  // the kernel's vector: lanes_ floats
  llvm::VectorType *vector8Type_; // the A packing's 8 x 8 transposition
  llvm::Value *packedA_ = nullptr;
  llvm::Value *tileScratch_ = nullptr;
};

} // namespace onnxc
