//===- frontend/ops/FunctionOps.cpp - Ops ONNX defines as functions ---------===//
//
// HardSigmoid, HardSwish, Selu, PRelu, BatchNormalization (inference),
// GlobalAveragePool and GlobalMaxPool are defined by the ONNX spec as
// functions of other ops. They are imported as that expansion rather than
// as IR ops of their own, so that every layer (shape inference, the
// reference evaluator, the elementwise fusion of codegen, the folding of
// constant parameters) serves them without a special case:
//
//   HardSigmoid(x)  = Clip(x * alpha + beta, 0, 1)
//   HardSwish(x)    = x * HardSigmoid(x) {alpha = 1/6, beta = 1/2}
//   Selu(x)         = gamma * Elu(x) {alpha}
//   PRelu(x, s)     = Where(x < 0, x * s, x)
//   BatchNorm(x)    = x * s + t, s = scale / sqrt(var + eps), t = B - mean * s,
//                     both viewed as [C, 1, ..., 1] to meet x's channel axis 1;
//                     in training mode mean and var are the batch's own
//                     (over every axis but 1), and the running statistics
//                     input * momentum + batch * (1 - momentum) are outputs
//   GlobalAveragePool(x) = ReduceMean(x) over axes 2.. (keepdims)
//   Swish(x)        = x * Sigmoid(alpha * x)                    (opset 24)
//   SwiGLU(a, b)    = Swish(a) * b                              (opset 28)
//
// Scalar parameters are f32 constants cast to x's type with CastLike, which
// constant folding removes once the type is known. A rank the expansion
// needs (BatchNorm's parameter view, the pooled axes) is computed from
// Shape(Shape(x)): inference knows it once x's rank is known.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"

#include "ir/Error.h"

#include <tuple>

namespace onnxc {

namespace {

/// `value` as a scalar of x's element type.
Value *scalarLike(OnnxNode &node, Value *x, float value, const std::string &name) {
  Value *constant = node.addConstant(name, Tensor::scalar<float>(value));
  return node.emitStep(OpKind::CastLike, {constant, x}, name);
}

Value *indexConstant(OnnxNode &node, const std::string &name, std::vector<int64_t> values) {
  int64_t n = int64_t(values.size());
  return node.addConstant(name, Tensor::fromVector<int64_t>({n}, values));
}

/// The single input X of a one-input op, checked.
Value *soleInput(OnnxNode &node) {
  std::vector<Value *> operands = node.operands();
  if (operands.size() != 1 || !operands[0])
    fail(node.describe(), ": ", node.proto().op_type(), " takes 1 input, got ", operands.size());
  if (node.proto().output_size() != 1)
    fail(node.describe(), ": ", node.proto().op_type(), " has 1 output, got ",
         node.proto().output_size());
  return operands[0];
}

/// Clip(x * alpha + beta, 0, 1).
Value *hardSigmoidOf(OnnxNode &node, Value *x, float alpha, float beta) {
  Value *scaled = node.emitStep(OpKind::Mul, {x, scalarLike(node, x, alpha, "alpha")}, "scaled");
  Value *shifted =
      node.emitStep(OpKind::Add, {scaled, scalarLike(node, x, beta, "beta")}, "shifted");
  return node.emitStep(
      OpKind::Clip, {shifted, scalarLike(node, x, 0.0f, "zero"), scalarLike(node, x, 1.0f, "one")},
      "clipped");
}

void importHardSigmoid(OnnxNode &node) {
  node.requireAttributesAmong({"alpha", "beta"});
  Value *x = soleInput(node);
  Value *y =
      hardSigmoidOf(node, x, node.floatAttribute("alpha", 0.2f), node.floatAttribute("beta", 0.5f));
  node.emit(OpKind::Identity, {y}, {});
}

void importHardSwish(OnnxNode &node) {
  node.requireAttributesAmong({});
  Value *x = soleInput(node);
  node.emit(OpKind::Mul, {x, hardSigmoidOf(node, x, 1.0f / 6.0f, 0.5f)}, {});
}

void importSelu(OnnxNode &node) {
  node.requireAttributesAmong({"alpha", "gamma"});
  Value *x = soleInput(node);
  float alpha = node.floatAttribute("alpha", 1.67326319217681884765625f);
  float gamma = node.floatAttribute("gamma", 1.05070102214813232421875f);
  Value *elu = node.emitStep(OpKind::Elu, {x}, "elu", {{"alpha", Attribute(alpha)}});
  node.emit(OpKind::Mul, {elu, scalarLike(node, x, gamma, "gamma")}, {});
}

void importPRelu(OnnxNode &node) {
  node.requireAttributesAmong({});
  std::vector<Value *> operands = node.operands();
  if (operands.size() != 2 || !operands[0] || !operands[1])
    fail(node.describe(), ": PRelu takes 2 inputs (X, slope), got ", operands.size());
  Value *x = operands[0], *slope = operands[1];
  Value *negative = node.emitStep(OpKind::Less, {x, scalarLike(node, x, 0.0f, "zero")}, "negative");
  Value *sloped = node.emitStep(OpKind::Mul, {x, slope}, "sloped");
  node.emit(OpKind::Where, {negative, sloped, x}, {});
}

/// x * Sigmoid(alpha * x); alpha = 1 multiplies nothing.
Value *swishOf(OnnxNode &node, Value *x, float alpha, const std::string &name) {
  Value *gate = x;
  if (alpha != 1.0f)
    gate = node.emitStep(OpKind::Mul, {x, scalarLike(node, x, alpha, name + "_alpha")},
                         name + "_scaled");
  return node.emitStep(OpKind::Mul, {x, node.emitStep(OpKind::Sigmoid, {gate}, name + "_sigmoid")},
                       name);
}

void importSwish(OnnxNode &node) {
  node.requireAttributesAmong({"alpha"});
  Value *x = soleInput(node);
  node.emit(OpKind::Identity, {swishOf(node, x, node.floatAttribute("alpha", 1.0f), "swish")}, {});
}

/// Swish(A) * B. The specification gives A and B one shape; a model whose shapes differ but
/// broadcast is invalid, and computes the broadcast product here (docs/ops.md).
void importSwiGLU(OnnxNode &node) {
  node.requireAttributesAmong({"alpha"});
  std::vector<Value *> operands = node.operands();
  if (operands.size() != 2 || !operands[0] || !operands[1])
    fail(node.describe(), ": SwiGLU takes 2 inputs (A, B), got ", operands.size());
  Value *gate = swishOf(node, operands[0], node.floatAttribute("alpha", 1.0f), "gate");
  node.emit(OpKind::Mul, {gate, operands[1]}, {});
}

/// Shape(Shape(x)) - `minus`: x's rank less the leading axes, as i64[1].
Value *rankLess(OnnxNode &node, Value *x, int64_t minus) {
  Value *shape = node.emitStep(OpKind::Shape, {x}, "shape");
  Value *rank = node.emitStep(OpKind::Shape, {shape}, "rank");
  return node.emitStep(OpKind::Sub, {rank, indexConstant(node, "leading", {minus})}, "trailing");
}

/// The axes BatchNormalization reduces in training mode: all but axis 1.
Value *axesButChannels(OnnxNode &node, Value *x) {
  Value *rank = node.emitStep(OpKind::Squeeze, {rankLess(node, x, 0)}, "rank");
  Value *spatial = node.emitStep(OpKind::Range,
                                 {node.addConstant("first", Tensor::scalar<int64_t>(2)), rank,
                                  node.addConstant("step", Tensor::scalar<int64_t>(1))},
                                 "spatial");
  return node.emitStep(OpKind::Concat, {indexConstant(node, "batch", {0}), spatial}, "axes",
                       {{"axis", Attribute(int64_t(0))}});
}

/// Training mode: the batch's own mean and (population) variance over every
/// axis but the channels, as [C] in the running statistics' type.
std::pair<Value *, Value *> batchStatistics(OnnxNode &node, Value *x, Value *runningMean) {
  Value *axes = axesButChannels(node, x);
  const AttributeMap keep = {{"keepdims", Attribute(int64_t(1))}};
  Value *mean = node.emitStep(OpKind::ReduceMean, {x, axes}, "batch_mean", keep);
  Value *deviation = node.emitStep(OpKind::Sub, {x, mean}, "batch_deviation");
  Value *square = node.emitStep(OpKind::Mul, {deviation, deviation}, "batch_square");
  Value *var = node.emitStep(OpKind::ReduceMean, {square, axes}, "batch_var", keep);
  Value *flat = indexConstant(node, "flat", {-1});
  auto perChannel = [&](Value *stat, const std::string &name) {
    Value *vector = node.emitStep(OpKind::Reshape, {stat, flat}, name);
    return node.emitStep(OpKind::CastLike, {vector, runningMean}, name);
  };
  return {perChannel(mean, "batch_mean"), perChannel(var, "batch_var")};
}

/// running = input * momentum + batch * (1 - momentum).
Value *runningStatistic(OnnxNode &node, Value *input, Value *batch, float momentum,
                        const std::string &name) {
  Value *kept = node.emitStep(OpKind::Mul, {input, scalarLike(node, input, momentum, "momentum")},
                              name + "_kept");
  Value *added = node.emitStep(
      OpKind::Mul, {batch, scalarLike(node, input, 1.0f - momentum, "complement")}, name + "_new");
  return node.emitStep(OpKind::Add, {kept, added}, name);
}

void importBatchNormalization(OnnxNode &node) {
  AttributeMap attributes = node.attributes();
  node.requireAttributesAmong({"epsilon", "momentum", "training_mode", "spatial"});
  bool training = false;
  if (auto it = attributes.find("training_mode"); it != attributes.end()) {
    if (!it->second.isInt() || (it->second.asInt() != 0 && it->second.asInt() != 1))
      fail(node.describe(), ": attribute 'training_mode' must be 0 or 1");
    training = it->second.asInt() == 1;
  }
  if (auto it = attributes.find("spatial");
      it != attributes.end() && (!it->second.isInt() || it->second.asInt() != 1))
    fail(node.describe(), ": BatchNormalization with spatial = 0 is not supported");
  std::vector<Value *> operands = node.operands();
  if (operands.size() != 5)
    fail(node.describe(), ": BatchNormalization takes 5 inputs (X, scale, B, mean, var), got ",
         operands.size());
  for (size_t i = 0; i < 5; ++i)
    if (!operands[i])
      fail(node.describe(), ": BatchNormalization input ", i, " is empty");
  if (!training && node.proto().output_size() != 1)
    fail(node.describe(), ": BatchNormalization outside training mode has 1 output, got ",
         node.proto().output_size());
  if (node.proto().output_size() > 3)
    fail(node.describe(), ": BatchNormalization has at most 3 outputs, got ",
         node.proto().output_size());
  Value *x = operands[0], *scale = operands[1], *bias = operands[2], *mean = operands[3],
        *var = operands[4];
  float epsilon = node.floatAttribute("epsilon", 1e-5f);
  float momentum = node.floatAttribute("momentum", 0.9f);
  Value *inputMean = mean, *inputVar = var;
  if (training)
    std::tie(mean, var) = batchStatistics(node, x, inputMean);
  // In the parameters' type (opset 15 lets it differ from x's), then cast.
  Value *eps =
      node.emitStep(OpKind::CastLike,
                    {node.addConstant("epsilon", Tensor::scalar<float>(epsilon)), var}, "epsilon");
  Value *deviation = node.emitStep(
      OpKind::Sqrt, {node.emitStep(OpKind::Add, {var, eps}, "variance")}, "deviation");
  Value *factor = node.emitStep(OpKind::Div, {scale, deviation}, "factor");
  Value *offset = node.emitStep(
      OpKind::Sub, {bias, node.emitStep(OpKind::Mul, {mean, factor}, "centre")}, "offset");
  // [C] -> [C, 1, ..., 1] (rank(x) - 2 ones), which broadcasts over axis 1.
  Value *ones = node.emitStep(OpKind::ConstantOfShape, {rankLess(node, x, 2)}, "ones",
                              {{"value", Attribute(Tensor::fromVector<int64_t>({1}, {1}))}});
  Value *view = node.emitStep(OpKind::Concat, {indexConstant(node, "channels", {-1}), ones}, "view",
                              {{"axis", Attribute(int64_t(0))}});
  auto perChannel = [&](Value *parameter, const std::string &name) {
    Value *cast = node.emitStep(OpKind::CastLike, {parameter, x}, name);
    return node.emitStep(OpKind::Reshape, {cast, view}, name);
  };
  Value *scaled = node.emitStep(OpKind::Mul, {x, perChannel(factor, "factor")}, "scaled");
  if (!training) {
    node.emit(OpKind::Add, {scaled, perChannel(offset, "offset")}, {});
    return;
  }
  node.emitOutput(0, OpKind::Add, {scaled, perChannel(offset, "offset")});
  Value *statistics[] = {nullptr, runningStatistic(node, inputMean, mean, momentum, "running_mean"),
                         runningStatistic(node, inputVar, var, momentum, "running_var")};
  for (int i = 1; i < node.proto().output_size(); ++i)
    if (!node.proto().output(i).empty())
      node.emitOutput(size_t(i), OpKind::Identity, {statistics[i]});
}

/// ReduceMean / ReduceMax over axes 2.. of x, keeping them.
void importGlobalPool(OnnxNode &node) {
  node.requireAttributesAmong({});
  Value *x = soleInput(node);
  Value *rank = node.emitStep(OpKind::Squeeze, {rankLess(node, x, 0)}, "rank");
  Value *axes = node.emitStep(OpKind::Range,
                              {node.addConstant("first", Tensor::scalar<int64_t>(2)), rank,
                               node.addConstant("step", Tensor::scalar<int64_t>(1))},
                              "axes");
  // A rank-2 input has no spatial axes: the pool is then the identity.
  node.emit(node.kind(), {x, axes},
            {{"keepdims", Attribute(int64_t(1))}, {"noop_with_empty_axes", Attribute(int64_t(1))}});
}

} // namespace

void registerFunctionImporters(OpImporterRegistry &registry) {
  registry.add({"", "HardSigmoid", 6, OpKind::Identity, importHardSigmoid});
  registry.add({"", "HardSwish", 14, OpKind::Mul, importHardSwish});
  registry.add({"", "Selu", 6, OpKind::Mul, importSelu});
  registry.add({"", "PRelu", 9, OpKind::Where, importPRelu});
  registry.add({"", "BatchNormalization", 9, OpKind::Add, importBatchNormalization});
  registry.add({"", "GlobalAveragePool", 1, OpKind::ReduceMean, importGlobalPool});
  registry.add({"", "GlobalMaxPool", 1, OpKind::ReduceMax, importGlobalPool});
  registry.add({"", "Swish", 24, OpKind::Mul, importSwish});
  registry.add({"", "SwiGLU", 28, OpKind::Mul, importSwiGLU});
}

} // namespace onnxc
