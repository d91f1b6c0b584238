//===- codegen/lower/elementwise/ElementwiseOpChecks.cpp - Which elementwise nodes compile -===//
//
// The dtype and attribute checks of ir/eval/ElementwiseKernels.cpp, made at
// compile time so an unsupported node is refused with the evaluator's reason
// instead of reaching a kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/elementwise/ElementwiseOps.h"

#include "ir/eval/Broadcast.h"

namespace onnxc::lower {

namespace {

std::string operandTypeError(const Node &node, size_t index, DType type) {
  return "operand " + std::to_string(index) + " of dtype " + std::string(dtypeName(type)) +
         " is not supported by " + std::string(node.opName());
}

/// Every operand present, of a dtype in `types`, and all of one dtype.
std::string checkSameDType(const Node &node, unsigned types) {
  if (node.numOperands() == 0)
    return "needs at least one operand";
  for (size_t i = 0; i < node.numOperands(); ++i) {
    const onnxc::Value *operand = node.operand(i);
    if (!operand)
      return "operand " + std::to_string(i) + " is absent";
    if (!dtypeIn(operand->dtype(), types))
      return operandTypeError(node, i, operand->dtype());
    if (operand->dtype() != node.operand(0)->dtype())
      return "operand " + std::to_string(i) + " is " + std::string(dtypeName(operand->dtype())) +
             " but operand 0 is " + std::string(dtypeName(node.operand(0)->dtype()));
  }
  return "";
}

std::string checkOperand(const Node &node, size_t index, unsigned types) {
  const onnxc::Value *operand = node.operand(index);
  if (!operand)
    return "operand " + std::to_string(index) + " is absent";
  if (!dtypeIn(operand->dtype(), types))
    return operandTypeError(node, index, operand->dtype());
  return "";
}

bool hasOneElement(const Shape &shape) {
  for (const Dim &d : shape.dims())
    if (d.constant() != std::optional<int64_t>(1))
      return false;
  return true;
}

std::string checkClip(const Node &node) {
  if (std::string error = checkOperand(node, 0, kNumericTypes); !error.empty())
    return error;
  for (size_t i = 1; i < node.numOperands(); ++i) {
    const onnxc::Value *bound = node.operand(i);
    if (!bound)
      continue;
    if (bound->dtype() != node.operand(0)->dtype())
      return "operand " + std::to_string(i) + " is " + std::string(dtypeName(bound->dtype())) +
             " but operand 0 is " + std::string(dtypeName(node.operand(0)->dtype()));
    if (!hasOneElement(bound->shape()))
      return std::string(i == 1 ? "min" : "max") + " must be a scalar, got " + bound->type().str();
  }
  return "";
}

std::string checkWhere(const Node &node) {
  if (std::string error = checkOperand(node, 0, kBoolType); !error.empty())
    return error;
  for (size_t i : {1, 2})
    if (std::string error = checkOperand(node, i, kAllTypes); !error.empty())
      return error;
  if (node.operand(1)->dtype() != node.operand(2)->dtype())
    return "operand 2 is " + std::string(dtypeName(node.operand(2)->dtype())) +
           " but operand 1 is " + std::string(dtypeName(node.operand(1)->dtype()));
  return "";
}

std::string checkGelu(const Node &node) {
  std::string approximate = node.getString("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return "Gelu approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"";
  return checkOperand(node, 0, kFloatTypes);
}

} // namespace

bool isElementwiseOp(OpKind kind) {
  switch (kind) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Pow:
  case OpKind::Mod:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Sum:
  case OpKind::Mean:
  case OpKind::Sqrt:
  case OpKind::Reciprocal:
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Sign:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Erf:
  case OpKind::Tanh:
  case OpKind::Sigmoid:
  case OpKind::Relu:
  case OpKind::LeakyRelu:
  case OpKind::Elu:
  case OpKind::Gelu:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Clip:
  case OpKind::Where:
  case OpKind::Equal:
  case OpKind::Less:
  case OpKind::Greater:
  case OpKind::LessOrEqual:
  case OpKind::GreaterOrEqual:
  case OpKind::Not:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::IsNaN:
  case OpKind::IsInf:
  case OpKind::Cast:
  case OpKind::CastLike:
    return true;
  default:
    return false;
  }
}

std::string elementwiseUnsupportedReason(const Node &node) {
  if (node.numResults() != 1 || node.result(0)->dtype() == DType::Unknown)
    return "the result has no inferred dtype";
  switch (node.kind()) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Max:
  case OpKind::Min:
    return checkSameDType(node, kNumericTypes);
  case OpKind::Mod:
    return checkSameDType(node, kNumericTypes);
  case OpKind::Sum:
  case OpKind::Mean:
    return checkSameDType(node, kFloatTypes);
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
    return checkSameDType(node, kBoolType);
  case OpKind::Equal:
    return checkSameDType(node, kAllTypes);
  case OpKind::Less:
  case OpKind::Greater:
  case OpKind::LessOrEqual:
  case OpKind::GreaterOrEqual:
    return checkSameDType(node, kNumericTypes);
  case OpKind::Neg:
  case OpKind::Relu:
    return checkOperand(node, 0, kFloatTypes | kSignedTypes);
  case OpKind::Abs:
  case OpKind::Sign:
    return checkOperand(node, 0, kNumericTypes);
  case OpKind::Not:
    return checkOperand(node, 0, kBoolType);
  case OpKind::Gelu:
    return checkGelu(node);
  case OpKind::Pow:
    if (std::string error = checkOperand(node, 0, kNumericTypes); !error.empty())
      return error;
    return checkOperand(node, 1, kNumericTypes);
  case OpKind::Clip:
    return checkClip(node);
  case OpKind::Where:
    return checkWhere(node);
  case OpKind::Cast:
    return checkOperand(node, 0, kAllTypes | kFourBitTypes);
  case OpKind::CastLike:
    if (std::string error = checkOperand(node, 0, kAllTypes | kFourBitTypes); !error.empty())
      return error;
    return node.operand(1) ? "" : "operand 1 is absent";
  default: // the unary float functions and IsNaN / IsInf
    return checkOperand(node, 0, kFloatTypes);
  }
}

bool needsScalarEmission(const Node &node) {
  return node.kind() == OpKind::Pow && !isFloat(node.operand(0)->dtype()) &&
         !isFloat(node.operand(1)->dtype());
}

bool isExpensiveElementwiseOp(const Node &node) {
  switch (node.kind()) {
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Erf:
  case OpKind::Tanh:
  case OpKind::Sigmoid:
  case OpKind::Gelu:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Pow:
  case OpKind::Mod:
  case OpKind::Elu:
    return true;
  case OpKind::Div:
    return !isFloat(node.operand(0)->dtype());
  default:
    return false;
  }
}

} // namespace onnxc::lower
