//===- frontend/ops/MicrosoftAttentionSupport.h - Helpers of the contrib attention importers -===//
//
// The com.microsoft attention ops (RotaryEmbedding, GroupQueryAttention,
// MultiHeadAttention, Attention) are imported as onnxc's own Attention and
// RotaryEmbedding plus plain ops for masks, positions and the packed
// projections. These helpers read their attributes (refusing what onnxc does
// not implement, in one line naming the node) and emit the small index
// computations the expansions share. Values are 1-D i64 tensors of one
// element where a scalar is meant, so that they concatenate and broadcast.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/ImportContext.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace onnxc::contrib {

/// The attributes of one contrib node, read with defaults and checked.
class ContribAttributes {
public:
  explicit ContribAttributes(OnnxNode &node);

  /// Fails on any attribute outside `known`.
  void requireKnown(std::initializer_list<const char *> known) const;
  int64_t getInt(const char *name, int64_t fallback) const;
  int64_t requireInt(const char *name) const;
  float getFloat(const char *name, float fallback) const;
  /// An int attribute that must hold `expected` (its default when absent):
  /// any other value is refused as not implemented.
  void requireIntValue(const char *name, int64_t expected, const char *why) const;

private:
  OnnxNode &node_;
  AttributeMap attributes_;
};

/// The node's inputs, with absent optional ones null (not dropped), padded
/// to `count`.
std::vector<Value *> contribInputs(OnnxNode &node, size_t count);

/// `operands` without its trailing absent (null) ones, as OnnxNode::operands gives them.
std::vector<Value *> trimmed(std::vector<Value *> operands);

/// Fails when input `index` is given: `what` says which form it would need.
void refuseInput(OnnxNode &node, const std::vector<Value *> &inputs, size_t index,
                 const char *name);
/// Fails when output `index` is requested (a non-empty name).
void refuseOutput(OnnxNode &node, int index, const char *name);

Value *i64Constant(OnnxNode &node, const std::string &name, std::vector<int64_t> values);
/// Dim `axis` of x as an i64 [1].
Value *dimOf(OnnxNode &node, Value *x, int64_t axis, const std::string &name);
/// A one-element i64 tensor as a scalar (for Range).
Value *toScalar(OnnxNode &node, Value *x, const std::string &name);
/// ONNX TensorProto type codes for Cast's `to`.
constexpr int64_t kOnnxFloat = 1, kOnnxInt64 = 7;
Value *castTo(OnnxNode &node, Value *x, int64_t onnxCode, const std::string &name);

/// Splits x on `axis` into parts of the given constant sizes.
std::vector<Value *> splitConstant(OnnxNode &node, Value *x, int64_t axis,
                                   const std::vector<int64_t> &sizes, const std::string &name);
/// Packed heads [B, S, (a+b+c)*H] split into [B, S, a*H], [B, S, b*H] and
/// [B, S, c*H] by head counts, whatever H is: viewed as [B, S, a+b+c, H].
std::vector<Value *> splitPackedHeads(OnnxNode &node, Value *packed,
                                      const std::vector<int64_t> &heads, const std::string &name);

/// A guard: `value` (i64) divided by `ok` (a bool [1]) cast to i64 as a
/// divisor named `message`. Where `ok` is 0 the run fails with onnxc's
/// integer-division error naming the divisor, i.e. the message; where it is
/// true the value passes unchanged. It checks run-time contents (sequence
/// lengths) that no shape assumption can express.
Value *guarded(OnnxNode &node, Value *value, Value *ok, const std::string &message);

/// An additive float mask from a key mask: 0 where `keep` is positive (or
/// true), `fill` elsewhere (onnxruntime's mask_filter_value), cast like `like`.
Value *additiveMaskFrom(OnnxNode &node, Value *keep, bool keepIsBool, float fill, Value *like,
                        const std::string &name);

/// The rank of a value's declared type (graph inputs, initializers), or -1.
int64_t declaredRank(const Value *value);

} // namespace onnxc::contrib
