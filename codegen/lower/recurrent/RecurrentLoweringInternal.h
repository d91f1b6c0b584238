//===- codegen/lower/recurrent/RecurrentLoweringInternal.h - LSTM/GRU/RNN pieces -===//
//
// Internal to the recurrent lowerings: the node as both emitters see it,
// read and checked once (RecurrentLowering.cpp), and the two emitters —
//
//   packed  f32 with AVX2+FMA and a constant input size
//           (RecurrentPackedLowering.cpp): X·Wᵀ + Wb for every time step
//           and direction as one packed GEMM into an arena buffer, then the
//           time loop with h·Rᵀ + Rb as a packed GEMV and vector gate math
//   loops   every float type (RecurrentLowering.cpp): both products per
//           step as dot products inside the time loop
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/kernels/GemmPacking.h"
#include "codegen/lower/LoweringContext.h"
#include "ir/OpAttributes.h"

#include <vector>

namespace onnxc::lower {

enum class CellKind { LSTM, GRU, RNN };

/// Operand positions of the ONNX recurrent ops.
enum RecurrentOperand { X, W, R, Bias, SequenceLens, InitialH, InitialC, Peepholes };

/// A recurrent node (opset-14 form with `layout`).
struct Recurrence {
  CellKind kind = CellKind::LSTM;
  DType dtype = DType::F32;
  Dim seq, batch, input;
  int64_t hidden = 0, gates = 1, directions = 1;
  bool batchMajor = false, reverseOnly = false, inputForget = false, linearBeforeReset = false;
  double clip = 0; // 0: no clipping
  /// activationsPerDirection() per direction, in the node's order.
  std::vector<RecurrentActivation> activations;

  int64_t activationsPerDirection() const {
    return kind == CellKind::LSTM ? 3 : kind == CellKind::GRU ? 2 : 1;
  }
  /// Whether direction `direction` runs from the last step to the first.
  bool reversed(int64_t direction) const { return reverseOnly || direction == 1; }
};

/// Reads and checks `node`; throws through ctx.unsupported for what no
/// emitter handles.
Recurrence readRecurrence(const LoweringContext &ctx, const Node &node, CellKind kind);

/// Lowers `node` with the packed emitter and returns true when it applies
/// (f32, AVX2+FMA, input size a constant); false, emitting nothing, else.
bool lowerPackedRecurrence(LoweringContext &ctx, const Node &node, const Recurrence &rec);

// ---- the packed emitter's pieces ----------------------------------------

/// Columns [begin, end) of Rᵀ (rows of R) that one GEMV computes: every gate
/// at once, except GRU without linear_before_reset, whose h gate multiplies
/// r ⊙ h rather than h and takes a second GEMV after the z and r gates.
struct RecurrentGemvGroup {
  int64_t begin = 0, end = 0;
  /// Where the group's packed R starts in a direction's packed R (floats).
  int64_t packedOffset = 0;
  /// Where the group's GEMV output starts in the step's h·Rᵀ scratch: each
  /// group's output is padded to whole panels.
  int64_t outputOffset = 0;
};

/// The layouts the packed emitter's steps agree on.
struct PackedRecurrentLayout {
  int64_t lanes = 8, nr = 16;
  int64_t input = 0;      ///< K of the input projection
  int64_t gateRows = 0;   ///< gates * hidden: N of both products
  GemmBlocking wBlocking; ///< the projection GEMM's (and packed W's)
  int64_t wFloats = 0;    ///< one direction's packed W
  std::vector<RecurrentGemvGroup> groups;
  int64_t rFloats = 0;      ///< one direction's packed R (every group)
  int64_t outputFloats = 0; ///< the h·Rᵀ scratch (every group, padded)

  /// Offset of gate `gate`'s h·Rᵀ + Rb in the scratch.
  int64_t gateOutput(int64_t gate, int64_t hidden) const;
};

PackedRecurrentLayout packedRecurrentLayout(const Recurrence &rec, int64_t lanes);

/// Emits the step of the time loop: one task per (direction, batch row)
/// reading its x·Wᵀ + Wb rows from `projection` (plan buffer: [direction]
/// [time-major or batch-major row][gateRows]) and R from `packedR` (plan
/// buffer, layout.rFloats per direction).
void emitPackedRecurrentLoop(LoweringContext &ctx, const Node &node, const Recurrence &rec,
                             const PackedRecurrentLayout &layout, int32_t projection,
                             int32_t packedR);

} // namespace onnxc::lower
