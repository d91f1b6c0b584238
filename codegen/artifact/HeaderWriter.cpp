//===- codegen/artifact/HeaderWriter.cpp - The generated C header of a compiled model -===//
#include "codegen/artifact/HeaderWriter.h"

#include "codegen/artifact/DescriptorEmitter.h"
#include "ir/Error.h"

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

namespace onnxc {

namespace {

/// Text safe inside a C block comment: a name containing "*/" must not end it.
std::string commentSafe(const std::string &text) {
  std::string safe;
  for (char c : text) {
    if (c == '/' && !safe.empty() && safe.back() == '*')
      safe += ' ';
    safe += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return safe;
}

/// An identifier fragment in upper case: "attention_mask" -> "ATTENTION_MASK".
std::string macroPart(const std::string &text) {
  std::string part;
  for (char c : text)
    part += std::isalnum(static_cast<unsigned char>(c)) ? char(std::toupper(c)) : '_';
  return part.empty() ? "_" : part;
}

std::string abiDTypeName(DType dtype) {
  return "ONNXC_" + macroPart(std::string(dtypeName(dtype)));
}

void describeTensors(std::ostringstream &os, const std::vector<PlanTensor> &tensors) {
  size_t width = 0;
  for (const PlanTensor &tensor : tensors)
    width = std::max(width, tensor.name.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const PlanTensor &tensor = tensors[i];
    os << " *   " << i << "  " << commentSafe(tensor.name)
       << std::string(width - tensor.name.size() + 2, ' ') << dtypeName(tensor.dtype) << " "
       << commentSafe(tensor.shape.str()) << "  (" << abiDTypeName(tensor.dtype) << ")\n";
  }
  if (tensors.empty())
    os << " *   (none)\n";
}

void describeSymbols(std::ostringstream &os, const ModelPlan &plan) {
  if (plan.symbols.empty()) {
    os << " * Every shape is fixed: the model has no symbolic dimensions.\n";
    return;
  }
  os << " * Symbols, bound from the input shapes at every run (one library serves\n"
     << " * every value; the other input dims are checked against their expressions):\n";
  for (const PlanSymbol &symbol : plan.symbols) {
    if (symbol.input < 0) {
      os << " *   " << commentSafe(symbol.name)
         << " = the cache capacity (onnxc_session_set_cache_capacity; by default the\n"
         << " *     length of the cache it lays out)\n";
      continue;
    }
    std::string input = size_t(symbol.input) < plan.inputs.size()
                            ? "'" + commentSafe(plan.inputs[symbol.input].name) + "'"
                            : std::to_string(symbol.input);
    os << " *   " << commentSafe(symbol.name) << " = dims[" << symbol.axis << "] of input " << input
       << "\n";
  }
  for (const PlanCachePair &pair : plan.cachePairs)
    os << " * KV cache updated in place: input '" << commentSafe(plan.inputs[pair.input].name)
       << "' -> output '" << commentSafe(plan.outputs[pair.output].name) << "', axis " << pair.axis
       << "\n";
}

/// #define <prefix>_<NAME> <index>, made unique when two names sanitize alike.
void defineIndices(std::ostringstream &os, const std::string &prefix,
                   const std::vector<PlanTensor> &tensors) {
  std::set<std::string> used;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string macro = prefix + "_" + macroPart(tensors[i].name);
    if (!used.insert(macro).second) {
      macro += "_" + std::to_string(i);
      used.insert(macro);
    }
    os << "#define " << macro << " " << i << "\n";
  }
}

} // namespace

std::string renderModelHeader(const ModelPlan &plan, const std::string &fileName) {
  std::string accessor = descriptorAccessorName(plan.name);
  std::string macro = macroPart(accessor);
  // Not <macro>_H: a model named "abi" would take model_abi.h's guard
  // (ONNXC_MODEL_ABI_H) and hide the ABI from its own header.
  std::string guard = macro + "_GENERATED_H";
  std::ostringstream os;
  os << "/*===- " << commentSafe(fileName) << " - onnxc compiled model '" << commentSafe(plan.name)
     << "' (generated; do not edit) ---===*\n"
     << " *\n"
     << " * Link the model's shared library and run it with the API of onnxc/onnxc.h:\n"
     << " *   onnxc_session *s = onnxc_session_create(" << accessor << "(), 0);\n"
     << " * Pass the inputs to onnxc_session_run in this order, with these element\n"
     << " * types and shapes; outputs come back in the order below.\n"
     << " *\n * Inputs:\n";
  describeTensors(os, plan.inputs);
  os << " * Outputs:\n";
  describeTensors(os, plan.outputs);
  os << " *\n";
  describeSymbols(os, plan);
  os << " * Matrix products in " << commentSafe(plan.precision)
     << (plan.precision == "f32" ? "" : " (operands rounded to bfloat16, sums in f32)") << ".\n";
  if (!plan.cpuFeatures.empty()) {
    os << " * Needs the CPU features";
    for (const std::string &feature : plan.cpuFeatures)
      os << " " << commentSafe(feature);
    os << " (checked when a session is created).\n";
  }
  os << " *===----------------------------------------------------------------------===*/\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include \"onnxc/onnxc.h\"\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
     << "#define " << macro << "_NUM_INPUTS " << plan.inputs.size() << "\n"
     << "#define " << macro << "_NUM_OUTPUTS " << plan.outputs.size() << "\n"
     << "#define " << macro << "_PRECISION \"" << plan.precision << "\"\n";
  defineIndices(os, macro + "_INPUT", plan.inputs);
  defineIndices(os, macro + "_OUTPUT", plan.outputs);
  os << "\n/* The model's descriptor (constant, shared by all sessions). */\n"
     << "const onnxc_model_descriptor *" << accessor << "(void);\n\n"
     << "#ifdef __cplusplus\n}\n#endif\n\n"
     << "/* The model of a program that includes one generated header; with several,\n"
     << " * the first one included wins. */\n"
     << "#ifndef ONNXC_DEFAULT_MODEL\n#define ONNXC_DEFAULT_MODEL " << accessor << "\n#endif\n\n"
     << "#endif /* " << guard << " */\n";
  return os.str();
}

void writeModelHeader(const ModelPlan &plan, const std::string &path) {
  std::string fileName = path.substr(path.find_last_of('/') + 1);
  std::ofstream out(path, std::ios::binary);
  out << renderModelHeader(plan, fileName);
  out.close();
  if (!out)
    fail("cannot write the model header '", path, "'");
}

} // namespace onnxc
