//===- frontend/OnnxImporter.cpp - ONNX model -> ir::Graph ------------------===//
//
// The entry points: load and check the file, convert an opset older than 13
// to 13, import the main graph, infer shapes. Every error raised below is rethrown once here with
// the model's path in front, so messages read "model.onnx: node 'x': ...".
//
//===----------------------------------------------------------------------===//
#include "frontend/OnnxImporter.h"

#include "frontend/GraphImporter.h"
#include "frontend/ModelLoader.h"
#include "frontend/OldOpsetRules.h"
#include "frontend/OpsetConversion.h"
#include "frontend/TensorProto.h"
#include "frontend/ValueInfo.h"
#include "ir/Error.h"
#include "ir/infer/ShapeInference.h"

#include <new>
#include <unordered_set>

namespace onnxc {

namespace {

/// Runs `body`, prefixing any error with the model path. Non-onnxc
/// exceptions (out of memory, filesystem errors) are reported the same way,
/// since the tool boundary only promises to catch onnxc::Error.
template <typename Body>
auto withPathPrefix(const std::string &path, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error &e) {
    fail(path, ": ", e.what());
  } catch (const std::bad_alloc &) {
    fail(path, ": out of memory while reading the model");
  } catch (const std::exception &e) {
    fail(path, ": ", e.what());
  }
}

/// a * b, or an error naming the initializer when it does not fit 128 bits.
unsigned __int128 checkedProduct(unsigned __int128 a, unsigned __int128 b,
                                 const onnx::TensorProto &init) {
  unsigned __int128 product;
  if (__builtin_mul_overflow(a, b, &product))
    fail("initializer '", init.name(), "': its dims multiply to more than 2^128 elements");
  return product;
}

unsigned __int128 checkedSum(unsigned __int128 a, unsigned __int128 b,
                             const onnx::TensorProto &init) {
  unsigned __int128 sum;
  if (__builtin_add_overflow(a, b, &sum))
    fail("initializer '", init.name(), "': the model's parameters add up to more than 2^128");
  return sum;
}

void summarizeWeights(const onnx::GraphProto &graph, ModelSummary &summary) {
  for (const onnx::TensorProto &init : graph.initializer()) {
    unsigned __int128 elements = 1;
    for (int64_t d : init.dims())
      elements = d > 0 ? checkedProduct(elements, uint64_t(d), init) : 0;
    summary.numParameters = checkedSum(summary.numParameters, elements, init);
    size_t elementBytes = 0;
    try {
      elementBytes = dtypeSize(dtypeFromOnnx(init.data_type(), ""));
    } catch (const Error &) {
      // Unsupported dtypes are listed by import, not by inspect; count no bytes.
    }
    summary.parameterBytes =
        checkedSum(summary.parameterBytes, checkedProduct(elements, elementBytes, init), init);
  }
}

/// Refuses a graph output declared with an element type other than the
/// one its producer makes, as onnxruntime does at load: tools would
/// disagree about it otherwise (inspect printing the declaration, run and
/// the header the inferred type).
void checkDeclaredOutputTypes(const onnx::GraphProto &proto, const Graph &graph) {
  for (int i = 0; i < proto.output_size() && size_t(i) < graph.outputs().size(); ++i) {
    const onnx::ValueInfoProto &declared = proto.output(i);
    if (!declared.has_type() || !declared.type().has_tensor_type() ||
        declared.type().tensor_type().elem_type() == 0)
      continue;
    DType expected = DType::Unknown;
    try {
      expected = dtypeFromOnnx(declared.type().tensor_type().elem_type(), "");
    } catch (const Error &) {
      continue; // an unsupported declared dtype: the producer's check names it
    }
    const Value *value = graph.outputs()[size_t(i)].value;
    if (value->dtype() == DType::Unknown || value->dtype() == expected)
      continue;
    const Node *producer = value->definingNode();
    fail("graph output '", declared.name(), "' is declared ", dtypeName(expected), ", but ",
         producer ? producer->describe() + " makes" : std::string("its value is"), " ",
         dtypeName(value->dtype()));
  }
}

} // namespace

std::unique_ptr<Graph> importOnnxFile(const std::string &path,
                                      std::vector<std::string> *externalFiles) {
  return withPathPrefix(path, [&] {
    onnx::ModelProto model = loadModelProto(path);
    OpsetMap opsets = checkOpsets(model);
    bool converted = convertToImportableOpset(model);
    if (converted)
      opsets = checkOpsets(model);
    std::unique_ptr<Graph> graph =
        importGraph(model.graph(), opsets, ModelFolder(modelFolder(path), externalFiles));
    inferShapes(*graph);
    checkDeclaredOutputTypes(model.graph(), *graph);
    if (converted)
      simplifyConvertedSoftmax(*graph);
    return graph;
  });
}

ModelSummary summarizeOnnxFile(const std::string &path) {
  return withPathPrefix(path, [&] {
    onnx::ModelProto model = loadModelProto(path);
    OpsetMap opsets = checkOpsets(model);
    const onnx::GraphProto &graph = model.graph();
    ModelSummary summary;
    summary.producer = model.producer_name();
    if (!model.producer_version().empty())
      summary.producer += (summary.producer.empty() ? "" : " ") + model.producer_version();
    summary.irVersion = model.ir_version();
    summary.opsets = opsets;
    std::unordered_set<std::string> initializers;
    for (const onnx::TensorProto &init : graph.initializer())
      initializers.insert(init.name());
    for (const onnx::SparseTensorProto &init : graph.sparse_initializer())
      initializers.insert(init.values().name());
    for (const onnx::ValueInfoProto &input : graph.input())
      if (!initializers.count(input.name()))
        summary.inputs.push_back(input.name() + ": " + describeValueType(input));
    for (const onnx::ValueInfoProto &output : graph.output())
      summary.outputs.push_back(output.name() + ": " + describeValueType(output));
    for (const onnx::NodeProto &node : graph.node()) {
      std::string domain = canonicalDomain(node.domain());
      ++summary.opHistogram[domain.empty() ? node.op_type() : domain + "." + node.op_type()];
    }
    summarizeWeights(graph, summary);
    // An older opset is converted on import; what matters is what the
    // converted model would need (no conversion is run for a summary).
    summary.unsupportedOps = opsets[""] < kMinOnnxOpset
                                 ? findOpsUnsupportedAfterConversion(graph, opsets)
                                 : findUnsupportedOps(graph, opsets);
    return summary;
  });
}

} // namespace onnxc
