// STUB: shape rules to be written.
#include "ir/infer/ShapeRules.h"
namespace onnxc {
void registerElementwiseShapeRules(ShapeRuleTable &) {}
} // namespace onnxc
