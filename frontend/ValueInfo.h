//===- frontend/ValueInfo.h - ONNX value types -> TensorType ----------------===//
#pragma once

#include "ir/shape/Shape.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>

namespace onnxc {

/// Turns a string into a valid symbol name [A-Za-z_][A-Za-z0-9_]*.
std::string sanitizeSymbol(const std::string &text);

/// Names the symbolic dimensions of a model's inputs. The same dim_param
/// always gives the same symbol; distinct dim_params that sanitize to the
/// same text, and unnamed dims, get distinct symbols.
class DimSymbols {
public:
  /// Claims the symbol for a dim_param (call for every dim_param before
  /// asking for fresh symbols, so fresh ones never take a param's name).
  Dim fromParam(const std::string &param);
  /// A new symbol, based on `hint`, not used by anything else.
  Dim fresh(const std::string &hint);

private:
  std::string claim(const std::string &base);

  std::map<std::string, std::string> params_;
  std::set<std::string> used_;
};

/// Claims the symbols of every dim_param among the graph's inputs.
void reserveInputSymbols(const onnx::GraphProto &graph, DimSymbols &symbols);

/// The type of a graph input: dtype from elem_type, each dim a constant
/// (dim_value), a symbol (dim_param) or a fresh symbol `<input>_d<axis>`.
/// A missing shape gives an unranked type. Throws onnxc::Error naming the
/// input for non-tensor types, unsupported dtypes and negative dims.
TensorType inputType(const onnx::ValueInfoProto &info, DimSymbols &symbols);

/// The declared type of any value as text ("f32[batch, 384]"), for
/// summaries: missing dims print as '?', unsupported types as their name.
std::string describeValueType(const onnx::ValueInfoProto &info);

} // namespace onnxc
