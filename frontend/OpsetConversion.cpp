//===- frontend/OpsetConversion.cpp - Opsets 7-12 brought to opset 13 -------===//
//
// ONNX's version converter (onnx/version_converter, libonnx 1.12) rewrites a
// model one opset step at a time with an adapter per changed op. It is used
// as it is, with its habits corrected around it:
//
//  - It copies every tensor into its own IR and back, and loses external data
//    on the way: large and external initializers are replaced by data-less
//    placeholders before it runs and put back by name afterwards (sparse
//    initializers too), which also spares copying the weights twice.
//  - It names the values it creates with a counter ("7", "12"), which can be
//    the name of a value of the model (older torch exports use numbers):
//    digit-only names are set aside before and the converter's renamed after.
//  - Its Softmax/LogSoftmax adapter needs the input's static shape (it fails
//    without one, and bakes the dims into a Reshape), and it passes Hardmax
//    through although that op changed the same way: these get a rule of their
//    own first (OldOpsetRules.cpp).
//  - It turns Resize-10 (and Upsample, via Resize-10) into Resize-11 without
//    the asymmetric coordinates Resize-10 used: set afterwards.
//  - It stops at an op of another domain (com.microsoft) and at onnxruntime's
//    own ONNX-domain ops (LayerNormalization and SimplifiedLayerNormalization
//    below opset 17): the main graph's such nodes are taken out before it
//    runs, their values made graph inputs and outputs, and put back after.
//  - An op it has no adapter for, or an op it does not know, stops it with a
//    message that names no node: both are checked first, so errors name the
//    node and its op version. Anything else it refuses is pinned on a node by
//    converting the nodes one at a time.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpsetConversion.h"

#include "frontend/GraphImporter.h"
#include "frontend/ImportContext.h"
#include "frontend/OldOpsetRules.h"
#include "ir/Error.h"

#include <onnx/defs/schema.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace onnxc {

namespace {

namespace vc = onnx::version_conversion;

/// The converter, with the two questions asked before running it.
class Converter final : public vc::DefaultVersionConverter {
public:
  /// The since_versions of an ai.onnx op; empty when ONNX has no such op.
  std::vector<int64_t> versionsOf(const std::string &opType) const {
    std::vector<int64_t> versions;
    auto op = all_schemas.find(opType);
    if (op == all_schemas.end())
      return versions;
    auto domain = op->second.find("");
    if (domain != op->second.end())
      for (const auto &entry : domain->second)
        versions.push_back(entry.first);
    return versions;
  }
  bool hasAdapter(const std::string &opType, int64_t from, int64_t to) const {
    auto op = adapters.find(opType);
    if (op == adapters.end())
      return false;
    auto source = op->second.find(onnx::OpSetID(from).toString());
    return source != op->second.end() && source->second.count(onnx::OpSetID(to).toString());
  }
};

/// Built once: it registers every adapter and indexes every schema.
const Converter &converter() {
  static const Converter instance;
  return instance;
}

bool isDefaultDomain(const onnx::NodeProto &node) { return canonicalDomain(node.domain()).empty(); }

bool isDigits(const std::string &name) {
  return !name.empty() &&
         std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void forEachNode(const onnx::GraphProto &graph,
                 const std::function<void(const onnx::NodeProto &)> &visit) {
  for (const onnx::NodeProto &node : graph.node()) {
    visit(node);
    for (const onnx::AttributeProto &attribute : node.attribute()) {
      if (attribute.has_g())
        forEachNode(attribute.g(), visit);
      for (const onnx::GraphProto &subgraph : attribute.graphs())
        forEachNode(subgraph, visit);
    }
  }
}

/// Applies `rename` to every value name of the graph and its subgraphs.
void renameValues(onnx::GraphProto &graph,
                  const std::function<std::string(const std::string &)> &rename) {
  auto fix = [&](std::string *name) {
    if (!name->empty())
      *name = rename(*name);
  };
  forEachGraph(graph, [&](onnx::GraphProto &g) {
    for (onnx::ValueInfoProto &value : *g.mutable_input())
      fix(value.mutable_name());
    for (onnx::ValueInfoProto &value : *g.mutable_output())
      fix(value.mutable_name());
    for (onnx::ValueInfoProto &value : *g.mutable_value_info())
      fix(value.mutable_name());
    for (onnx::TensorProto &init : *g.mutable_initializer())
      fix(init.mutable_name());
    for (onnx::SparseTensorProto &init : *g.mutable_sparse_initializer())
      fix(init.mutable_values()->mutable_name());
    for (onnx::NodeProto &node : *g.mutable_node()) {
      for (std::string &input : *node.mutable_input())
        fix(&input);
      for (std::string &output : *node.mutable_output())
        fix(&output);
    }
  });
}

NameSet valueNames(onnx::GraphProto &graph) {
  NameSet names;
  renameValues(graph, [&](const std::string &name) {
    names.insert(name);
    return name;
  });
  return names;
}

/// A name starting with `base` that no name in `names` starts with.
std::string unusedPrefix(const NameSet &names, std::string base) {
  auto taken = [&] {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string &name) { return name.rfind(base, 0) == 0; });
  };
  while (taken())
    base += "_";
  return base;
}

// --- Before converting: what it could not do -----------------------------------

void reorderTopologically(onnx::GraphProto &graph) {
  std::vector<int> order = checkGraphStructure(graph);
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  nodes.Swap(graph.mutable_node());
  for (int index : order)
    graph.add_node()->Swap(&nodes[index]);
}

/// The newest since_version of `versions` not above `opset` (0 if none).
int64_t versionAt(const std::vector<int64_t> &versions, int64_t opset) {
  int64_t since = 0;
  for (int64_t version : versions)
    if (version <= opset)
      since = std::max(since, version);
  return since;
}

/// Every node the converter would stop at, in one error.
void checkConvertible(const onnx::GraphProto &graph, int64_t opset) {
  std::vector<std::string> problems;
  forEachNode(graph, [&](const onnx::NodeProto &node) {
    if (!isDefaultDomain(node))
      return;
    const std::string &op = node.op_type();
    std::vector<int64_t> versions = converter().versionsOf(op);
    if (versions.empty()) {
      problems.push_back(describeNodeProto(node) + ": " + op + " is not an ai.onnx op");
      return;
    }
    // The adapters index a node's inputs without looking: check the counts.
    const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(op, int(opset), "");
    if (!schema) {
      problems.push_back(describeNodeProto(node) + ": " + op + " is not an op of opset " +
                         std::to_string(opset));
      return;
    }
    int inputs = node.input_size(), outputs = node.output_size();
    if (inputs < schema->min_input() || inputs > schema->max_input() ||
        outputs < schema->min_output() || outputs > schema->max_output()) {
      problems.push_back(describeNodeProto(node) + ": " + op + "-" +
                         std::to_string(schema->since_version()) + " with " +
                         std::to_string(inputs) + " inputs and " + std::to_string(outputs) +
                         " outputs is malformed");
      return;
    }
    // Scan-8 has a batch axis that Scan-9 dropped; the converter's adapter
    // keeps the shapes as they were, so the converted node scans the wrong axis.
    if (op == "Scan" && versionAt(versions, opset) < 9) {
      problems.push_back(describeNodeProto(node) +
                         ": Scan-8 (with a batch axis) does not convert to Scan-9 faithfully; "
                         "export the model at opset 9 or later");
      return;
    }
    for (int64_t to = opset + 1; to <= kMinOnnxOpset; ++to)
      if (std::count(versions.begin(), versions.end(), to) &&
          !converter().hasAdapter(op, to - 1, to)) {
        problems.push_back(describeNodeProto(node) + ": " + op + "-" +
                           std::to_string(versionAt(versions, opset)) +
                           " has no conversion to opset " + std::to_string(to));
        return;
      }
  });
  if (problems.empty())
    return;
  std::string list;
  for (const std::string &problem : problems)
    list += (list.empty() ? "" : "; ") + problem;
  fail("cannot convert opset ", opset, " to ", kMinOnnxOpset, ": ", list);
}

// --- Weights kept out of the converter -------------------------------------------

/// Initializers this small stay (shape inference reads Reshape's shapes from them).
constexpr size_t kInlineInitializerBytes = 1024;

struct SetAsideWeights {
  std::unordered_map<std::string, onnx::TensorProto> dense;
  google::protobuf::RepeatedPtrField<onnx::SparseTensorProto> sparse;
};

onnx::TensorProto placeholderFor(const onnx::TensorProto &tensor) {
  onnx::TensorProto placeholder;
  placeholder.set_name(tensor.name());
  placeholder.set_data_type(tensor.data_type());
  *placeholder.mutable_dims() = tensor.dims();
  return placeholder;
}

SetAsideWeights setAsideWeights(onnx::GraphProto &graph) {
  SetAsideWeights aside;
  for (onnx::TensorProto &init : *graph.mutable_initializer()) {
    bool external = init.data_location() == onnx::TensorProto::EXTERNAL;
    if (!external && init.ByteSizeLong() <= kInlineInitializerBytes)
      continue;
    onnx::TensorProto placeholder = placeholderFor(init);
    std::string name = init.name();
    init.Swap(&placeholder);
    aside.dense.emplace(name, std::move(placeholder));
  }
  aside.sparse.Swap(graph.mutable_sparse_initializer());
  for (const onnx::SparseTensorProto &init : aside.sparse) {
    onnx::TensorProto placeholder = placeholderFor(init.values());
    *placeholder.mutable_dims() = init.dims();
    *graph.add_initializer() = std::move(placeholder);
  }
  return aside;
}

void restoreWeights(onnx::GraphProto &graph, SetAsideWeights &aside) {
  NameSet sparseNames;
  for (const onnx::SparseTensorProto &init : aside.sparse)
    sparseNames.insert(init.values().name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> converted;
  converted.Swap(graph.mutable_initializer());
  for (onnx::TensorProto &init : converted) {
    if (sparseNames.count(init.name()))
      continue;
    auto original = aside.dense.find(init.name());
    graph.add_initializer()->Swap(original != aside.dense.end() ? &original->second : &init);
  }
  graph.mutable_sparse_initializer()->Swap(&aside.sparse);
}

// --- Nodes kept out of the converter ---------------------------------------------

/// Whether the converter must not see `node`: an op of another domain (the
/// converter looks every node's op up among ONNX's schemas, and stops at a
/// com.microsoft one), or one of the ops onnxruntime registers in the ONNX
/// domain itself, which its transformer optimizer writes into old-opset models
/// and the converter has no schema of at those opsets.
bool keptFromConverter(const onnx::NodeProto &node) {
  const std::string &op = node.op_type();
  return !isDefaultDomain(node) || op == "LayerNormalization" ||
         op == "SimplifiedLayerNormalization";
}

/// The main graph's nodes kept from the converter, taken out with the values
/// they read made graph outputs and the values they write graph inputs, so
/// that the nodes around them convert as usual; put back afterwards. (Such a
/// node inside a subgraph still stops the converter.)
struct SetAsideNodes {
  std::vector<onnx::NodeProto> nodes;
  NameSet addedInputs, addedOutputs;
};

SetAsideNodes setAsideNodes(onnx::GraphProto &graph) {
  SetAsideNodes aside;
  NameSet known;
  for (const auto *list : {&graph.input(), &graph.output()})
    for (const onnx::ValueInfoProto &value : *list)
      known.insert(value.name());
  for (const onnx::TensorProto &init : graph.initializer())
    known.insert(init.name());
  google::protobuf::RepeatedPtrField<onnx::NodeProto> converted;
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    if (!keptFromConverter(node)) {
      converted.Add()->Swap(&node);
      continue;
    }
    for (const std::string &input : node.input())
      if (!input.empty() && !known.count(input) && !aside.addedInputs.count(input) &&
          aside.addedOutputs.insert(input).second)
        graph.add_output()->set_name(input);
    for (const std::string &output : node.output())
      if (!output.empty() && aside.addedInputs.insert(output).second)
        graph.add_input()->set_name(output);
    aside.nodes.push_back(std::move(node));
  }
  graph.mutable_node()->Swap(&converted);
  return aside;
}

void restoreNodes(onnx::GraphProto &graph, SetAsideNodes &aside) {
  if (aside.nodes.empty())
    return;
  auto dropAdded = [](google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> &values,
                      const NameSet &added) {
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
    for (onnx::ValueInfoProto &value : values)
      if (!added.count(value.name()))
        kept.Add()->Swap(&value);
    values.Swap(&kept);
  };
  dropAdded(*graph.mutable_input(), aside.addedInputs);
  dropAdded(*graph.mutable_output(), aside.addedOutputs);
  for (onnx::NodeProto &node : aside.nodes)
    graph.add_node()->Swap(&node);
  reorderTopologically(graph);
}

// --- Running the converter -------------------------------------------------------

/// The converter's assertion text without its source location.
std::string converterMessage(const std::string &what) {
  std::string message = what;
  size_t failed = message.rfind("failed: ");
  if (failed != std::string::npos)
    message = message.substr(failed + 8);
  std::replace(message.begin(), message.end(), '\n', ' ');
  while (!message.empty() && message.back() == ' ')
    message.pop_back();
  if (!message.empty())
    message[0] = char(std::tolower((unsigned char)message[0]));
  return message;
}

/// Converts each node of the main graph alone, to find the one the converter
/// refused as a whole; returns its description, or "" when none fails alone.
std::string findRefusedNode(const onnx::ModelProto &model, int64_t opset, std::string &why) {
  std::unordered_map<std::string, const onnx::ValueInfoProto *> declared;
  for (const auto *list : {&model.graph().input(), &model.graph().value_info()})
    for (const onnx::ValueInfoProto &value : *list)
      declared[value.name()] = &value;
  for (const onnx::NodeProto &node : model.graph().node()) {
    if (!isDefaultDomain(node))
      continue;
    onnx::ModelProto single;
    single.set_ir_version(model.ir_version());
    *single.mutable_opset_import() = model.opset_import();
    onnx::GraphProto *graph = single.mutable_graph();
    *graph->add_node() = node;
    for (const std::string &input : node.input()) {
      if (input.empty())
        continue;
      auto it = declared.find(input);
      if (it != declared.end())
        *graph->add_input() = *it->second;
      else
        graph->add_input()->set_name(input);
    }
    for (const std::string &output : node.output())
      if (!output.empty())
        graph->add_output()->set_name(output);
    try {
      converter().convert_version(single, onnx::OpSetID(opset), onnx::OpSetID(kMinOnnxOpset));
    } catch (const std::exception &error) {
      why = converterMessage(error.what());
      return describeNodeProto(node) + ": " + node.op_type() + "-" +
             std::to_string(versionAt(converter().versionsOf(node.op_type()), opset));
    }
  }
  return "";
}

onnx::ModelProto runConverter(const onnx::ModelProto &model, int64_t opset) {
  try {
    return converter().convert_version(model, onnx::OpSetID(opset), onnx::OpSetID(kMinOnnxOpset));
  } catch (const std::exception &error) {
    std::string why = converterMessage(error.what());
    std::string node = findRefusedNode(model, opset, why);
    if (node.empty())
      fail("converting opset ", opset, " to ", kMinOnnxOpset, " failed: ", why);
    fail(node, " could not be converted to opset ", kMinOnnxOpset, ": ", why);
  }
}

onnx::OperatorSetIdProto *defaultOpset(onnx::ModelProto &model) {
  for (onnx::OperatorSetIdProto &entry : *model.mutable_opset_import())
    if (canonicalDomain(entry.domain()).empty())
      return &entry;
  return nullptr;
}

} // namespace

std::string opTypeAfterConversion(const std::string &opType, int64_t opset) {
  if (opset < kMinOnnxOpset && opType == "Upsample")
    return "Resize";
  if (opset < 11 && opType == "Scatter")
    return "ScatterElements";
  return opType;
}

std::vector<std::string> findOpsUnsupportedAfterConversion(const onnx::GraphProto &graph,
                                                           const OpsetMap &opsets) {
  auto defaultOpset = opsets.find("");
  int64_t opset = defaultOpset == opsets.end() ? kMinOnnxOpset : defaultOpset->second;
  // The nodes alone, with their op types once converted: what the registry is asked.
  onnx::GraphProto shadow;
  for (const onnx::NodeProto &node : graph.node()) {
    onnx::NodeProto *copy = shadow.add_node();
    copy->set_name(node.name());
    copy->set_domain(node.domain());
    copy->set_op_type(isDefaultDomain(node) ? opTypeAfterConversion(node.op_type(), opset)
                                            : node.op_type());
    *copy->mutable_output() = node.output();
  }
  OpsetMap converted = opsets;
  converted[""] = std::max(opset, kMinOnnxOpset);
  std::vector<std::string> unsupported = findUnsupportedOps(shadow, converted);
  // Report the ops by the names the file uses.
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    const std::string &renamed = shadow.node(i).op_type();
    if (renamed == node.op_type())
      continue;
    for (std::string &entry : unsupported)
      if (entry.rfind(renamed + " (", 0) == 0)
        entry = node.op_type() + entry.substr(renamed.size());
  }
  return unsupported;
}

bool convertToImportableOpset(onnx::ModelProto &model) {
  onnx::OperatorSetIdProto *entry = defaultOpset(model);
  if (!entry || entry->version() >= kMinOnnxOpset)
    return false;
  // Names and cycles first: neither check below would make sense without.
  checkGraphStructure(model.graph());
  OpsetMap opsets;
  for (const onnx::OperatorSetIdProto &import : model.opset_import())
    opsets[canonicalDomain(import.domain())] = import.version();
  failOnUnsupportedOps(findOpsUnsupportedAfterConversion(model.graph(), opsets));
  return convertOldOpset(model);
}

bool convertOldOpset(onnx::ModelProto &model) {
  onnx::OperatorSetIdProto *entry = defaultOpset(model);
  if (!entry || entry->version() >= kMinOnnxOpset)
    return false;
  int64_t opset = entry->version();
  onnx::GraphProto &graph = *model.mutable_graph();
  reorderTopologically(graph);
  SetAsideNodes foreign = setAsideNodes(graph);
  checkConvertible(graph, opset);

  NameSet names = valueNames(graph);
  const std::string digitsTag = unusedPrefix(names, "onnxc.numbered.");
  renameValues(graph,
               [&](const std::string &name) { return isDigits(name) ? digitsTag + name : name; });
  names = valueNames(graph);
  SetAsideWeights weights = setAsideWeights(graph);
  NameSet declaredValueInfo;
  for (const onnx::ValueInfoProto &value : graph.value_info())
    declaredValueInfo.insert(value.name());

  if (hasLegacySoftmax(graph))
    rewriteLegacySoftmax(graph, names);

  onnx::ModelProto converted = runConverter(model, opset);
  onnx::GraphProto &result = *converted.mutable_graph();
  if (opset <= 10)
    setResize10Semantics(result);
  restoreWeights(result, weights);
  // Shapes inferred for the Softmax rule stay out; the importer infers its own.
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> valueInfo;
  valueInfo.Swap(result.mutable_value_info());
  for (onnx::ValueInfoProto &value : valueInfo)
    if (declaredValueInfo.count(value.name()))
      result.add_value_info()->Swap(&value);

  NameSet resultNames = valueNames(result);
  std::unordered_map<std::string, std::string> newNames;
  renameValues(result, [&](const std::string &name) -> std::string {
    if (name.rfind(digitsTag, 0) == 0)
      return name.substr(digitsTag.size());
    if (!isDigits(name))
      return name;
    auto [it, inserted] = newNames.try_emplace(name);
    if (inserted)
      it->second = freshName(resultNames, "opset" + std::to_string(kMinOnnxOpset) + "_" + name);
    return it->second;
  });

  restoreNodes(result, foreign);
  graph.Swap(&result);
  entry->set_version(kMinOnnxOpset);
  return true;
}

} // namespace onnxc
