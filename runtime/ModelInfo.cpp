//===- runtime/ModelInfo.cpp - The C API that checks and reads descriptors ===//
#include "onnxc/model_info.h"

#include "CpuFeatures.h"
#include "DescriptorCheck.h"
#include "DimExpr.h"
#include "DimExprQueries.h"

#include <cstring>
#include <string>

using namespace onnxc::runtime;

namespace {
// The last check's message, kept for the caller until its next check.
thread_local std::string lastCheckProblem;
} // namespace

extern "C" {

const char *onnxc_model_check(const onnxc_model_descriptor *model) {
  lastCheckProblem = checkDescriptor(model);
  return lastCheckProblem.empty() ? nullptr : lastCheckProblem.c_str();
}

const char *onnxc_model_check_cpu(const onnxc_model_descriptor *model) {
  lastCheckProblem = model ? checkModelCpuFeatures(*model) : "the model descriptor is NULL";
  return lastCheckProblem.empty() ? nullptr : lastCheckProblem.c_str();
}

const char *onnxc_cpu_features_checked(void) { return checkableCpuFeatures(); }

int32_t onnxc_dim_num_terms(onnxc_dim_expr expr) {
  return expr ? static_cast<int32_t>(expr[0]) : 0;
}

onnxc_dim_term onnxc_dim_get_term(onnxc_dim_expr expr, int32_t index) {
  if (index < 0 || index >= onnxc_dim_num_terms(expr))
    return onnxc_dim_term{0, 0, nullptr};
  DimTerms terms(expr);
  for (int32_t skipped = 0; skipped < index; ++skipped)
    terms.next();
  return terms.next();
}

int onnxc_dim_is_constant(onnxc_dim_expr expr, int64_t *value) {
  if (!expr || !isConstantDimExpr(expr))
    return 0;
  if (value)
    *value = evaluateDimExpr(expr, nullptr, 0).value_or(0);
  return 1;
}

size_t onnxc_dim_format(const onnxc_model_descriptor *model, onnxc_dim_expr expr, char *buffer,
                        size_t size) {
  std::string text = model && expr ? formatDimExpr(expr, model->symbol_names) : std::string();
  if (size > 0 && buffer) {
    size_t copied = text.size() < size - 1 ? text.size() : size - 1;
    std::memcpy(buffer, text.data(), copied);
    buffer[copied] = '\0';
  }
  return text.size();
}

} // extern "C"
