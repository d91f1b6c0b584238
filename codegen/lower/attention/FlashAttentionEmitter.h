//===- codegen/lower/attention/FlashAttentionEmitter.h - The fused attention's emitter -===//
//
// Internal to the fused f32 attention kernel (the algorithm is described in
// FlashAttentionLowering.cpp). The emitter's parts live by concept:
//
//   FlashAttentionLowering.cpp    geometry, task decoding, the key-tile loop
//                                 of a block, the entry points
//   FlashAttentionTiles.cpp       one key tile: Q·Kᵀ micro-kernel, masks,
//                                 online softmax update, exp pass, P·V
//   FlashAttentionSkippedKeys.cpp keys outside the band with a finite fill
//   FlashAttentionLayout.cpp      Q packed transposed, Y stored back, both
//                                 through 8x8 register transpositions
//   FlashAttentionSingleRow.cpp   a block of one query row (a decode step):
//                                 Q·Kᵀ and P·V with the lanes over columns
//
// Everything is written for a vector of `width` lanes (8: ymm, 16: zmm)
// running over query rows; the geometry (FlashGeometry) follows the width.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/attention/AttentionLoweringInternal.h"
#include "codegen/lower/attention/FlashVectorIR.h"

#include <array>
#include <limits>
#include <optional>

namespace onnxc::lower {

/// The register blocking of one vector width. Q·Kᵀ and P·V both keep
/// rowVectors x group accumulators, plus rowVectors row loads and one
/// broadcast, within the register file (16 ymm / 32 zmm).
struct FlashGeometry {
  unsigned width;     ///< lanes per vector (query rows per row vector)
  int64_t rowVectors; ///< row vectors per block (the most; a last block may use fewer)
  int64_t group;      ///< keys (Q·Kᵀ) or value columns (P·V) per micro-kernel step
  int64_t tileKeys;   ///< keys per tile (a multiple of group)
  int64_t rows() const { return int64_t(width) * rowVectors; }
};

/// The geometry for `lanes` (8 or 16; see FlashAttentionLowering.cpp).
FlashGeometry flashGeometry(int64_t lanes);

/// Head sizes up to this keep Qt and Ot within a few tens of KiB of stack.
inline constexpr int64_t kFlashMaxHeadSize = 512;
/// Columns per register transposition of the query packing and the output.
inline constexpr int64_t kFlashTransposeColumns = 8;
/// Column vectors of o the single-row P·V keeps in registers at a time.
inline constexpr int64_t kSingleRowChunks = 8;

using FlashValues = FlashVectorIR::Values;

/// The task's block of query rows and the bases it reads from. A block is
/// `rows` consecutive positions [first, last] of one head, or, for a decode
/// step of grouped-query attention (FlashAttentionLowering.cpp), position
/// first (= last) of the `rows` query heads from `head` on that share one KV
/// head: block row r is then head + r.
struct FlashBlock {
  llvm::Value *batch, *head, *first, *last; // first and last valid row's position
  llvm::Value *rows;                        // valid rows (1 to geometry.rows())
  /// Elements between consecutive block rows of Q and of Y: a position's
  /// stride, or a head's for a block of grouped heads.
  llvm::Value *qRowStride, *yRowStride;
  llvm::Value *keyBase, *valueBase, *maskBase;
  // With a past: the bases of the past key/value rows, which are keys
  // [0, past); K and V hold keys [past, past + kvSeq).
  llvm::Value *pastKeyBase = nullptr, *pastValueBase = nullptr;
  FlashValues position; // <width x i32> row index per lane, per row vector
  FlashValues maskRow;  // <width x i64> mask offset per lane, per row vector
  llvm::Value *keyEnd;  // keys [.., keyEnd) may be visible
  /// Keys before it are hidden by attn_mask from every row (null: none
  /// known); see FlashAttentionMaskedRange.cpp.
  llvm::Value *keyStart = nullptr;
};

/// One key tile: keys [begin, end); a boundary tile applies causal, window
/// and key-end masks element-wise and clamps its key reads to keyEnd - 1. A
/// cached tile lies below the past length: its K and V rows are all in the
/// past cache, one stride apart, with no per-key choice of buffer.
struct FlashTile {
  llvm::Value *begin, *end;
  bool boundary;
  bool cached = false;
};

class FlashAttentionEmitter {
public:
  FlashAttentionEmitter(LoweringContext &ctx, const Node &node, const AttentionShape &shape);
  void emit();

private:
  using Value = llvm::Value;
  using Block = FlashBlock;
  using Tile = FlashTile;
  using Values = FlashValues;

  llvm::IRBuilder<> &ir() { return k_.ir(); }
  Value *dim(const Dim &d) { return k_.dim(d); }
  unsigned width() const { return geometry_.width; }
  int64_t rows() const { return geometry_.rows(); }
  /// Keys (Q·Kᵀ) or value columns (P·V) per micro-kernel step of the block
  /// being emitted: geometry_.group, doubled on a single row vector (a
  /// decode step's group of query heads, or a last block of few rows), where
  /// group accumulators alone were too few chains for the FMA's latency (4
  /// on 8 lanes: half the FMA throughput).
  int64_t keyGroup() const {
    return rowVectors_ == 1 && geometry_.rowVectors > 1 ? 2 * geometry_.group : geometry_.group;
  }

  // FlashAttentionLowering.cpp
  void prepareMask();
  void emitTask(Value *task);
  void emitBlock(const Block &block);
  Block decodeTask(Value *task);
  /// Whether this run's blocks are groups of heads (i1; false without headGroup_).
  Value *groupsHeads();
  Value *keyBegin(const Block &block);
  Value *isInterior(const Block &block, Value *begin);

  // FlashAttentionTiles.cpp
  Values emitTile(const Block &block, const Tile &tile, llvm::ArrayRef<Value *> state);
  Values emitScores(const Block &block, const Tile &tile, Value *groups);
  void applyMasks(const Block &block, const Tile &tile, Value *key, Value *clampedKey, Value **acc);
  /// The attn_mask element of `clampedKey` for each row vector.
  Values loadMask(const Block &block, Value *clampedKey);
  Value *keyIndex(const Block &block, const Tile &tile, Value *key);
  Values emitExponentials(const Block &block, const Tile &tile, Value *count,
                          llvm::ArrayRef<Value *> shift);
  void emitValues(const Block &block, const Tile &tile, Value *count,
                  llvm::ArrayRef<Value *> alpha);
  void emitValueGroup(const Block &block, const Tile &tile, Value *count,
                      llvm::ArrayRef<Value *> alpha, Value *firstColumn, int64_t columns);

  // FlashAttentionMaskedRange.cpp
  /// Whether attn_mask lets some row of the block (some lane) see `key` (i1).
  Value *maskAllows(const Block &block, Value *key);
  /// The same for keys [first, first + 16) of the block's one mask row.
  Value *chunkAllows(const Block &block, Value *first);
  /// Moves `from` towards `limit` (step -1: from an end down, +1: from a
  /// beginning up) `width` keys at a time while they are hidden from every
  /// row (width 16: chunkAllows, only where `enabled`); returns where it stops.
  Value *scanHiddenKeys(const Block &block, Value *from, Value *limit, int step, int64_t width,
                        Value *enabled);
  /// The block with its key range narrowed past the keys attn_mask hides
  /// from every row at either end (unchanged with a finite mask_fill).
  Block withMaskedRange(const Block &block);

  // FlashAttentionSkippedKeys.cpp
  Values emitSkippedKeys(const Block &block, llvm::ArrayRef<Value *> state);
  Values skippedScores(const Block &block, Value *key);
  Values addSkippedKey(const Block &block, Value *key, llvm::ArrayRef<Value *> scores,
                       llvm::ArrayRef<Value *> state);

  // FlashAttentionSingleRow.cpp
  void beginSingleRow(const Block &block);
  void endSingleRow();
  Values emitSingleRowScores(const Block &block, const Tile &tile, Value *groups);
  void emitSingleRowValues(const Block &block, const Tile &tile, Value *count, Value *alpha);
  /// Column vector `chunk` of a K or V row of `size` floats (the lanes past
  /// it are 0, and not read).
  Value *rowChunk(Value *row, int64_t chunk, int64_t size);
  /// Vectors of width() covering `size` floats.
  int64_t chunksOf(int64_t size) const { return (size + int64_t(width()) - 1) / int64_t(width()); }

  // FlashAttentionPairedColumns.cpp
  /// Whether a block of grouped heads can take paired lanes.
  bool canPairColumns() const;
  void beginPairedColumns(const Block &block);
  /// Each lane plus its pair's: the head's score in both of its lanes.
  Value *addLanePairs(Value *acc);
  Values endPairedColumns(llvm::ArrayRef<Value *> state);

  // FlashAttentionLayout.cpp
  void packQuery(const Block &block);
  void emitOutput(const Block &block, llvm::ArrayRef<Value *> maxima, llvm::ArrayRef<Value *> sums);

  /// Index of row vector `v` of column (or key) `column` in Ot, Qt (or P).
  Value *outputIndex(Value *column, int64_t v) {
    return ir().CreateAdd(ir().CreateMul(column, ir().getInt64(rows())),
                          ir().getInt64(v * int64_t(width())));
  }
  Value *minusInfinity() { return v_.splat(-std::numeric_limits<float>::infinity()); }
  /// The cached keys before K's (0 without a past): the band (causal,
  /// window) of query row i is centred on key i + past.
  Value *pastLength() { return dim(shape_.past); }
  /// Address of key `key`'s row of K or V (of past_key / past_value below
  /// the past length; always of the cache when `cached`: a cached tile's).
  Value *keyRow(const Block &block, Value *key, bool cached = false);
  Value *valueRow(const Block &block, Value *key, bool cached = false);
  /// Row `key` of the operand in `slot` (at `base`, rows `stride` apart),
  /// or below the past length (or always when `cached`) of the contiguous
  /// cache in `pastSlot`.
  Value *cacheRow(Value *key, unsigned slot, Value *base, Value *stride, int pastSlot,
                  Value *pastBase, int64_t rowSize, bool cached);

  const Node &node_;
  /// The node's shape, with the layouts of operands read in place.
  AttentionShape shape_;
  FlashGeometry geometry_;
  StepBuilder step_;
  KernelBuilder &k_;
  FlashVectorIR v_;
  int64_t headSize_, valueSize_, window_;
  bool causal_;
  /// masked_rows_zero: a row whose keys are all hidden gives zeros, not NaN.
  bool zeroMaskedRows_;
  float scale_;
  /// mask_fill when finite: hidden keys score it (see FlashAttentionLowering.cpp).
  std::optional<float> fill_;
  unsigned q_, key_, value_, y_;
  /// Element offsets of Q, K and V in the buffers read (nonzero in place).
  int64_t qOffset_ = 0, keyOffset_ = 0, valueOffset_ = 0;
  int mask_ = -1;
  int pastKey_ = -1, pastValue_ = -1;
  /// Row vectors of the block being emitted (1 to geometry_.rowVectors); the
  /// scratch layouts keep rows() lanes per column whatever it is.
  int64_t rowVectors_;
  /// The block being emitted is one query row (FlashAttentionSingleRow.cpp).
  bool singleRow_ = false;
  /// The block being emitted is grouped heads on paired lanes
  /// (FlashAttentionPairedColumns.cpp): its products run over column pairs.
  bool pairedColumns_ = false;
  // The mask in the [batch, heads, qSeq, keys] view (AttentionLowering.cpp's
  // MaskView); rowBroadcast_ when its qSeq axis is provably 1.
  std::array<Value *, 4> maskStrides_{};
  Value *maskColumns_ = nullptr;
  DType maskType_ = DType::Bool;
  bool rowBroadcast_ = true;
  /// The mask's heads axis is provably 1 (every head reads the same rows).
  bool headBroadcast_ = true;
  /// Query heads per KV head when a decode step's blocks may be the group's
  /// heads (FlashAttentionLowering.cpp), else 0.
  int64_t headGroup_ = 0;
  Value *queryT_ = nullptr, *scores_ = nullptr, *output_ = nullptr; // stack scratch
  Value *queryRow_ = nullptr, *rowOutput_ = nullptr;                // q and o of a single row
  Value *queryPairs_ = nullptr;                                     // Qp of paired lanes
};

} // namespace onnxc::lower
