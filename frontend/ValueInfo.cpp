//===- frontend/ValueInfo.cpp - ONNX value types -> TensorType --------------===//
#include "frontend/ValueInfo.h"

#include "frontend/TensorProto.h"
#include "ir/Error.h"

#include <cctype>

namespace onnxc {

std::string sanitizeSymbol(const std::string &text) {
  std::string out;
  out.reserve(text.size() + 1);
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (std::isalnum(u) || c == '_') && u < 128 ? c : '_';
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out.insert(out.begin(), '_');
  return out;
}

std::string DimSymbols::claim(const std::string &base) {
  std::string name = base;
  for (unsigned i = 1; used_.count(name); ++i)
    name = base + "_" + std::to_string(i);
  used_.insert(name);
  return name;
}

Dim DimSymbols::fromParam(const std::string &param) {
  auto it = params_.find(param);
  if (it == params_.end())
    it = params_.emplace(param, claim(sanitizeSymbol(param))).first;
  return Dim::symbol(it->second);
}

Dim DimSymbols::fresh(const std::string &hint) { return Dim::symbol(claim(sanitizeSymbol(hint))); }

namespace {

/// A dim_param that names no symbol: "?", as paddle2onnx and tf2onnx write
/// an unknown dimension (two "?" dims need not be equal).
bool namesASymbol(const onnx::TensorShapeProto_Dimension &dim) {
  return dim.has_dim_param() && !dim.dim_param().empty() && dim.dim_param() != "?";
}

} // namespace

void reserveInputSymbols(const onnx::GraphProto &graph, DimSymbols &symbols) {
  for (const onnx::ValueInfoProto &info : graph.input()) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
      continue;
    for (const auto &dim : info.type().tensor_type().shape().dim())
      if (namesASymbol(dim))
        symbols.fromParam(dim.dim_param());
  }
}

namespace {

const onnx::TypeProto_Tensor &tensorTypeOf(const onnx::ValueInfoProto &info,
                                           const std::string &context) {
  if (!info.has_type())
    fail(context, " has no type");
  if (!info.type().has_tensor_type())
    fail(context, " is not a tensor (sequences, maps and optionals are not supported)");
  return info.type().tensor_type();
}

} // namespace

TensorType inputType(const onnx::ValueInfoProto &info, DimSymbols &symbols) {
  std::string context = "graph input '" + info.name() + "'";
  const onnx::TypeProto_Tensor &tensor = tensorTypeOf(info, context);
  TensorType type;
  type.dtype = dtypeFromOnnx(tensor.elem_type(), context);
  if (!tensor.has_shape())
    return type; // unranked
  std::vector<Dim> dims;
  int axis = 0;
  for (const auto &dim : tensor.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() != -1) {
      if (dim.dim_value() < 0)
        fail(context, ": dimension ", axis, " is negative (", dim.dim_value(), ")");
      dims.push_back(Dim(dim.dim_value()));
    } else if (namesASymbol(dim)) {
      dims.push_back(symbols.fromParam(dim.dim_param()));
    } else {
      // An unnamed dimension (or -1 or "?", which paddle2onnx and tf2onnx
      // write for a dynamic one, as onnxruntime reads them) still varies with the input,
      // so it gets a symbol of its own rather than '?': shape inference can
      // then relate it to other dims computed from it.
      dims.push_back(symbols.fresh(info.name() + "_d" + std::to_string(axis)));
    }
    ++axis;
  }
  type.shape = Shape(std::move(dims));
  return type;
}

std::string describeValueType(const onnx::ValueInfoProto &info) {
  if (!info.has_type())
    return TensorType().str(); // declared without a type: nothing known
  if (!info.type().has_tensor_type())
    return "(not a tensor)";
  const onnx::TypeProto_Tensor &tensor = info.type().tensor_type();
  TensorType type;
  try {
    type.dtype = dtypeFromOnnx(tensor.elem_type(), "value");
  } catch (const Error &) {
    return "(unsupported dtype " + std::to_string(tensor.elem_type()) + ")";
  }
  if (tensor.has_shape()) {
    std::vector<Dim> dims;
    for (const auto &dim : tensor.shape().dim()) {
      // -1 and "?" are how some exporters write a dynamic dim (see inputType).
      if (dim.has_dim_value() && dim.dim_value() != -1)
        dims.push_back(Dim(dim.dim_value()));
      else if (namesASymbol(dim))
        dims.push_back(Dim::symbol(sanitizeSymbol(dim.dim_param())));
      else
        dims.push_back(Dim::unknown());
    }
    type.shape = Shape(std::move(dims));
  }
  return type.str();
}

} // namespace onnxc
