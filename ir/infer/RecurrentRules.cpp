//===- ir/infer/RecurrentRules.cpp - LSTM, GRU, RNN shape rules -----------===//
//
// X is [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1);
// W is [dirs, gates*hidden, input]. Results: Y [seq, dirs, batch, hidden]
// (layout 1: [batch, seq, dirs, hidden]), Y_h and Y_c [dirs, batch, hidden]
// (layout 1: [batch, dirs, hidden]).
//
//===----------------------------------------------------------------------===//
#include "ir/infer/LinearAlgebraRulesInternal.h"

#include "ir/Error.h"
#include "ir/Node.h"

namespace onnxc {
namespace {

int64_t directionCount(const Node &node) {
  std::string direction = node.getString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    fail(node.describe(), ": unknown direction '", direction, "'");
  return direction == "bidirectional" ? 2 : 1;
}

/// hidden_size if given, else W's gate rows / gates, else R's last dim.
Dim hiddenSize(const Node &node, int64_t gates, const Shape &w, const Shape &r) {
  if (node.hasAttr("hidden_size")) {
    int64_t hidden = node.getInt("hidden_size", 0);
    if (hidden <= 0)
      fail(node.describe(), ": hidden_size must be positive, got ", hidden);
    return Dim(hidden);
  }
  if (r.isRanked() && r.rank() == 3 && !r[2].isUnknown())
    return r[2];
  if (w.isRanked() && w.rank() == 3)
    if (std::optional<Dim> h = w[1].divideExactly(Dim(gates)))
      return *h;
  return Dim::unknown();
}

void inferRecurrent(InferenceContext &context, Node &node, int64_t gates) {
  requireOperandsPresent(node, 3);
  DType dtype = commonOperandDType(node, {0, 1, 2, 3});
  if (dtype != DType::Unknown && !isFloat(dtype))
    fail(node.describe(), ": recurrent op needs floating point operands, got ", dtypeName(dtype));
  const Shape &x = node.operand(0)->shape();
  const Shape &w = node.operand(1)->shape();
  const Shape &r = node.operand(2)->shape();
  int64_t dirs = directionCount(node);
  bool batchMajor = node.getInt("layout", 0) != 0;
  if (!x.isRanked())
    return setAllResultsUnranked(node, dtype);
  if (x.rank() != 3)
    fail(node.describe(), ": recurrent input X must be 3-D, got ", x.str());
  for (const Shape *weights : {&w, &r}) {
    if (!weights->isRanked())
      continue;
    if (weights->rank() != 3)
      fail(node.describe(), ": recurrent weights must be 3-D, got ", weights->str());
    requireSameDim(context, node, (*weights)[0], Dim(dirs), "number of directions", *weights,
                   Shape({Dim(dirs)}));
  }
  Dim hidden = hiddenSize(node, gates, w, r);
  if (w.isRanked()) {
    requireSameDim(context, node, w[2], x[2], "recurrent input size", w, x);
    requireSameDim(context, node, w[1], hidden * Dim(gates), "recurrent gate rows of W", w,
                   Shape({hidden * Dim(gates)}));
  }
  if (r.isRanked())
    requireSameDim(context, node, r[2], hidden, "recurrent hidden size of R", r, Shape({hidden}));

  Dim seq = batchMajor ? x[1] : x[0];
  Dim batch = batchMajor ? x[0] : x[1];
  Shape y =
      batchMajor ? Shape({batch, seq, Dim(dirs), hidden}) : Shape({seq, Dim(dirs), batch, hidden});
  Shape state = batchMajor ? Shape({batch, Dim(dirs), hidden}) : Shape({Dim(dirs), batch, hidden});
  node.result(0)->setType({dtype, y});
  for (size_t i = 1; i < node.numResults(); ++i)
    node.result(i)->setType({dtype, state});
}

void inferLSTM(Node &node, InferenceContext &context) { inferRecurrent(context, node, 4); }
void inferGRU(Node &node, InferenceContext &context) { inferRecurrent(context, node, 3); }
void inferRNN(Node &node, InferenceContext &context) { inferRecurrent(context, node, 1); }

} // namespace

void registerRecurrentShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::LSTM, inferLSTM);
  table.add(OpKind::GRU, inferGRU);
  table.add(OpKind::RNN, inferRNN);
}

} // namespace onnxc
